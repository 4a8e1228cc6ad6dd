// Warp-synchronous code over `volatile` pointers, as the pre-Volta CUDA samples and countless
// reductions write it:
//
//     __device__ void warpReduce(volatile int* s, int tid) { s[tid] += s[tid + 32]; s[tid] += s[tid + 16]; ... }
//     if (tid < 32) warpReduce(sdata, tid);          // no __syncwarp()
//
// Undefined since Volta, yet GPUs run it in lockstep and give the expected sum; our fibers run the
// lanes of a warp one after another, which would give a silently different answer. So the source
// rewrite turns every `volatile T*` variable and parameter (and `(volatile T*)` cast) of a
// pointee that is a number into a LockstepPtr<T>: before each load or store through it, the lane
// waits until every other live lane of its warp has also reached such an access (or is parked at
// a barrier / warp operation, or has exited) - the `__activemask()` rendezvous of the scheduler.
// All lanes therefore perform access k before any performs access k+1: the lockstep order of the
// hardware. Outside a kernel (host code) it is a plain volatile access.
#pragma once

namespace vf {

inline void lockstep_step() {
    if (in_kernel()) (void)active_mask();
}

// An element reached through a pointer whose every load and store first calls Step(): the
// lockstep rendezvous here, the race check's yield in vf_probe.h. E is the element as stored
// (`volatile T` for lockstep, `T` for the probe); reads give a plain T.
template <class T, class E, void (*Step)()> struct StepRef;

template <class U> inline decltype(auto) step_value(const U& v) { return v; }
template <class T, class E, void (*Step)()> inline T step_value(const StepRef<T, E, Step>& r) {
    return static_cast<T>(r);
}

template <class T, class E, void (*Step)()> struct StepRef {
    E* p;
    operator T() const {
        Step();
        return *p;
    }
    const StepRef& operator=(const T& v) const {
        Step();
        *p = v;
        return *this;
    }
    const StepRef& operator=(const StepRef& o) const { return *this = static_cast<T>(o); }
#define VF_STEP_COMPOUND(op)                                             \
    template <class U> const StepRef& operator op##=(const U& v) const { \
        auto rhs = step_value(v);                                        \
        T cur = *this;                                                   \
        return *this = static_cast<T>(cur op rhs);                       \
    }
    VF_STEP_COMPOUND(+)
    VF_STEP_COMPOUND(-)
    VF_STEP_COMPOUND(*)
    VF_STEP_COMPOUND(/)
    VF_STEP_COMPOUND(%)
    VF_STEP_COMPOUND(&)
    VF_STEP_COMPOUND(|)
    VF_STEP_COMPOUND(^)
    VF_STEP_COMPOUND(<<)
    VF_STEP_COMPOUND(>>)
#undef VF_STEP_COMPOUND
    const StepRef& operator++() const { return *this += 1; }
    const StepRef& operator--() const { return *this -= 1; }
    T operator++(int) const {
        T old = *this;
        *this = static_cast<T>(old + 1);
        return old;
    }
    T operator--(int) const {
        T old = *this;
        *this = static_cast<T>(old - 1);
        return old;
    }
    E* operator&() const { return p; }
};

template <class T> using LockstepRef = StepRef<T, volatile T, lockstep_step>;

// Numbers (and pointers) step; anything else (a struct, __half) is a plain volatile reference.
template <class T> inline constexpr bool lockstep_scalar_v =
    std::is_arithmetic_v<std::remove_cv_t<T>> || std::is_enum_v<std::remove_cv_t<T>> ||
    std::is_pointer_v<std::remove_cv_t<T>>;

template <class T> struct LockstepPtr {
    using Ref = std::conditional_t<lockstep_scalar_v<T> && !std::is_const_v<T>, LockstepRef<T>, volatile T&>;
    volatile T* p;

    LockstepPtr() = default;
    LockstepPtr(volatile T* q) : p(q) {}
    // from anything that converts to the pointer (a `extern __shared__` proxy, another LockstepPtr)
    template <class U, class = std::enable_if_t<!std::is_same_v<std::decay_t<U>, LockstepPtr> &&
                                                std::is_convertible_v<const U&, volatile T*>>>
    LockstepPtr(const U& u) : p(u) {}
    // `(volatile T*)address`: an integer made into a pointer, as the cast would on a GPU
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    explicit LockstepPtr(I address) : p(reinterpret_cast<volatile T*>(static_cast<std::uintptr_t>(address))) {}
    operator volatile T*() const { return p; }
    template <class U> explicit operator U*() const { return (U*)p; }

    template <class I, class = std::enable_if_t<std::is_integral_v<I> || std::is_enum_v<I>>>
    Ref operator[](I i) const {
        if constexpr (std::is_reference_v<Ref>) return p[i];
        else return Ref{p + i};
    }
    Ref operator*() const { return (*this)[0]; }
    volatile T* operator->() const { return p; }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>> LockstepPtr operator+(I i) const { return p + i; }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>> LockstepPtr operator-(I i) const { return p - i; }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    friend LockstepPtr operator+(I i, const LockstepPtr& q) { return q.p + i; }
    std::ptrdiff_t operator-(const LockstepPtr& o) const { return p - o.p; }
    std::ptrdiff_t operator-(volatile T* o) const { return p - o; }
    template <class I> LockstepPtr& operator+=(I i) { p += i; return *this; }
    template <class I> LockstepPtr& operator-=(I i) { p -= i; return *this; }
    LockstepPtr& operator++() { ++p; return *this; }
    LockstepPtr& operator--() { --p; return *this; }
    LockstepPtr operator++(int) { LockstepPtr old = *this; ++p; return old; }
    LockstepPtr operator--(int) { LockstepPtr old = *this; --p; return old; }
};

// The plain `volatile T*` behind a kernel's volatile parameter (a LockstepPtr on the fiber path),
// for the block functions of regions.py: they keep a block's threads in lockstep themselves (every
// thread's access k before any thread's access k+1, loads before stores) and must not enter the
// fibers' rendezvous. Anything else (already a plain pointer) is passed through.
template <class T> inline volatile T* lockstep_raw(const LockstepPtr<T>& q) { return q.p; }
template <class P> inline P lockstep_raw(P q) { return q; }

}  // namespace vf
