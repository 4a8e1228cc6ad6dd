// CUDA atomics on the host. Blocks run concurrently on several OS threads, so every atomic is a
// real std::atomic_ref operation. They are templates over the pointee type, so a user's own
// overload (e.g. the classic CAS-based `atomicAdd(double*, double)` for old GPUs) is a better
// match and coexists instead of clashing. Types without a native atomic (__half, __half2,
// __nv_bfloat16, user structs of 2/4/8 bytes) go through a compare-and-swap loop on their bits.
#pragma once

namespace vf {
template <class T> inline constexpr bool native_atomic = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

template <size_t N> struct bits_of;
template <> struct bits_of<2> { using type = unsigned short; };
template <> struct bits_of<4> { using type = unsigned int; };
template <> struct bits_of<8> { using type = unsigned long long; };

// Applies `f(old) -> new` atomically to *p and returns the old value.
template <class T, class F> inline T atomic_update(T* p, F f) {
    if constexpr (native_atomic<T>) {
        std::atomic_ref<T> ref(*p);
        T old = ref.load(std::memory_order_relaxed);
        while (!ref.compare_exchange_weak(old, f(old), std::memory_order_seq_cst)) {
        }
        return old;
    } else {
        static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                      "atomics need a 2-, 4- or 8-byte type");
        using B = typename bits_of<sizeof(T)>::type;
        std::atomic_ref<B> ref(*reinterpret_cast<B*>(p));
        B old_bits = ref.load(std::memory_order_relaxed);
        for (;;) {
            T old_val;
            std::memcpy(&old_val, &old_bits, sizeof(T));
            T new_val = f(old_val);
            B new_bits;
            std::memcpy(&new_bits, &new_val, sizeof(T));
            if (ref.compare_exchange_weak(old_bits, new_bits, std::memory_order_seq_cst)) return old_val;
        }
    }
}
}  // namespace vf

template <class T, class U> inline T atomicAdd(T* p, U v) {
    if constexpr (vf::native_atomic<T>) {
        return std::atomic_ref<T>(*p).fetch_add((T)v, std::memory_order_seq_cst);
    } else {
        return vf::atomic_update(p, [&](T o) { return T(o + T(v)); });
    }
}
template <class T, class U> inline T atomicSub(T* p, U v) {
    if constexpr (vf::native_atomic<T>) {
        return std::atomic_ref<T>(*p).fetch_sub((T)v, std::memory_order_seq_cst);
    } else {
        return vf::atomic_update(p, [&](T o) { return T(o - T(v)); });
    }
}
template <class T, class U> inline T atomicExch(T* p, U v) {
    if constexpr (vf::native_atomic<T>) {
        return std::atomic_ref<T>(*p).exchange((T)v, std::memory_order_seq_cst);
    } else {
        return vf::atomic_update(p, [&](T) { return T(v); });
    }
}
template <class T, class U> inline T atomicMin(T* p, U v) {
    return vf::atomic_update(p, [&](T o) { return T(v) < o ? T(v) : o; });
}
template <class T, class U> inline T atomicMax(T* p, U v) {
    return vf::atomic_update(p, [&](T o) { return o < T(v) ? T(v) : o; });
}
template <class T, class U> inline T atomicAnd(T* p, U v) {
    return std::atomic_ref<T>(*p).fetch_and((T)v, std::memory_order_seq_cst);
}
template <class T, class U> inline T atomicOr(T* p, U v) {
    return std::atomic_ref<T>(*p).fetch_or((T)v, std::memory_order_seq_cst);
}
template <class T, class U> inline T atomicXor(T* p, U v) {
    return std::atomic_ref<T>(*p).fetch_xor((T)v, std::memory_order_seq_cst);
}
// atomicInc/atomicDec wrap at `limit` exactly as the hardware does.
inline unsigned atomicInc(unsigned* p, unsigned limit) {
    return vf::atomic_update(p, [&](unsigned o) { return o >= limit ? 0u : o + 1u; });
}
inline unsigned atomicDec(unsigned* p, unsigned limit) {
    return vf::atomic_update(p, [&](unsigned o) { return (o == 0u || o > limit) ? limit : o - 1u; });
}
template <class T, class U, class V> inline T atomicCAS(T* p, U compare, V val) {
    if constexpr (vf::native_atomic<T>) {
        T expected = (T)compare;
        std::atomic_ref<T>(*p).compare_exchange_strong(expected, (T)val, std::memory_order_seq_cst);
        return expected;
    } else {
        using B = typename vf::bits_of<sizeof(T)>::type;
        B expected, desired;
        T c = T(compare), d = T(val);
        std::memcpy(&expected, &c, sizeof(T));
        std::memcpy(&desired, &d, sizeof(T));
        std::atomic_ref<B>(*reinterpret_cast<B*>(p))
            .compare_exchange_strong(expected, desired, std::memory_order_seq_cst);
        T old;
        std::memcpy(&old, &expected, sizeof(T));
        return old;
    }
}

// Scope-qualified variants (block / system) behave like the device-wide ones here.
#define VF_SCOPED_ATOMIC(name)                                                            \
    template <class T, class... A> inline T name##_block(T* p, A... a) { return name(p, a...); }  \
    template <class T, class... A> inline T name##_system(T* p, A... a) { return name(p, a...); }
VF_SCOPED_ATOMIC(atomicAdd)
VF_SCOPED_ATOMIC(atomicSub)
VF_SCOPED_ATOMIC(atomicExch)
VF_SCOPED_ATOMIC(atomicMin)
VF_SCOPED_ATOMIC(atomicMax)
VF_SCOPED_ATOMIC(atomicAnd)
VF_SCOPED_ATOMIC(atomicOr)
VF_SCOPED_ATOMIC(atomicXor)
VF_SCOPED_ATOMIC(atomicCAS)
VF_SCOPED_ATOMIC(atomicInc)
VF_SCOPED_ATOMIC(atomicDec)
#undef VF_SCOPED_ATOMIC
