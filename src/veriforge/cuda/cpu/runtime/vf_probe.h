// The race check's interleaving probe (cpu/race.py, docs/cpu-runtime.md "Race check"). Threads of a
// block normally run one after another between barriers, so a read-modify-write race -
// `x[i] += v` by several threads on one element without atomics - quietly gives the sum of every
// thread's update, in any order. In a build for the probe (`rewrite(..., probe=True)`), every
// `T* p` parameter of a __global__ function becomes a ProbePtr<T>: before each load or store
// through it the thread yields to the next thread of its block, so threads interleave access by
// access and an unprotected update loses the others' writes, as it can on a GPU. Atomics take
// the raw address (`&p[i]`, `p + i`) and are not interleaved.
#pragma once

namespace vf {

inline void probe_step() {
    if (in_kernel()) yield_thread();
}

template <class T> using ProbeRef = StepRef<T, T, probe_step>;  // vf_lockstep.h

template <class T> struct ProbePtr {
    using Ref = std::conditional_t<std::is_arithmetic_v<T> || std::is_enum_v<T>, ProbeRef<T>, T&>;
    T* p;

    ProbePtr() = default;
    ProbePtr(T* q) : p(q) {}
    operator T*() const { return p; }
    template <class U> explicit operator U*() const { return (U*)p; }

    template <class I, class = std::enable_if_t<std::is_integral_v<I> || std::is_enum_v<I>>>
    Ref operator[](I i) const {
        if constexpr (std::is_reference_v<Ref>) return p[i];
        else return Ref{p + i};
    }
    template <class U, class E, void (*S)()>
    Ref operator[](const StepRef<U, E, S>& i) const { return (*this)[static_cast<U>(i)]; }
    Ref operator*() const { return (*this)[0]; }
    T* operator->() const { return p; }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>> ProbePtr operator+(I i) const { return p + i; }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>> ProbePtr operator-(I i) const { return p - i; }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    friend ProbePtr operator+(I i, const ProbePtr& q) { return q.p + i; }
    std::ptrdiff_t operator-(const ProbePtr& o) const { return p - o.p; }
    std::ptrdiff_t operator-(const T* o) const { return p - o; }
    template <class I> ProbePtr& operator+=(I i) { p += i; return *this; }
    template <class I> ProbePtr& operator-=(I i) { p -= i; return *this; }
    ProbePtr& operator++() { ++p; return *this; }
    ProbePtr& operator--() { --p; return *this; }
    ProbePtr operator++(int) { ProbePtr old = *this; ++p; return old; }
    ProbePtr operator--(int) { ProbePtr old = *this; --p; return old; }
};

}  // namespace vf
