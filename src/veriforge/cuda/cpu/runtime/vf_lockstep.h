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

template <class T> struct LockstepRef;

template <class U> inline decltype(auto) lockstep_value(const U& v) { return v; }
template <class T> inline T lockstep_value(const LockstepRef<T>& r) { return static_cast<T>(r); }

template <class T> struct LockstepRef {
    volatile T* p;
    operator T() const {
        lockstep_step();
        return *p;
    }
    const LockstepRef& operator=(const T& v) const {
        lockstep_step();
        *p = v;
        return *this;
    }
    const LockstepRef& operator=(const LockstepRef& o) const { return *this = static_cast<T>(o); }
#define VF_LOCKSTEP_COMPOUND(op)                                        \
    template <class U> const LockstepRef& operator op##=(const U& v) const { \
        auto rhs = lockstep_value(v);                                   \
        T cur = *this;                                                  \
        return *this = static_cast<T>(cur op rhs);                      \
    }
    VF_LOCKSTEP_COMPOUND(+)
    VF_LOCKSTEP_COMPOUND(-)
    VF_LOCKSTEP_COMPOUND(*)
    VF_LOCKSTEP_COMPOUND(/)
    VF_LOCKSTEP_COMPOUND(%)
    VF_LOCKSTEP_COMPOUND(&)
    VF_LOCKSTEP_COMPOUND(|)
    VF_LOCKSTEP_COMPOUND(^)
    VF_LOCKSTEP_COMPOUND(<<)
    VF_LOCKSTEP_COMPOUND(>>)
#undef VF_LOCKSTEP_COMPOUND
    const LockstepRef& operator++() const { return *this += 1; }
    const LockstepRef& operator--() const { return *this -= 1; }
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
    volatile T* operator&() const { return p; }
};

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

}  // namespace vf
