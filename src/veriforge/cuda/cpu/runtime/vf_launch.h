// Launching kernels. Two ways in:
//  * `k<<<grid, block, shared, stream>>>(args)` in a whole program is rewritten by the Python
//    front end into `::vf::make_launch(LaunchConfig(grid, block, ...), "k", [&](auto&&... a) { k(a...); })(args)`
//    - the lambda lets template kernels deduce their arguments exactly as nvcc would.
//  * `Module.launch()` from Python calls a kernel by name through a KernelRegistrar the front end
//    appends to the module; it records each parameter's C type so Python can convert arguments.
#pragma once

namespace vf {

struct LaunchConfig {
    dim3 grid;
    dim3 block;
    size_t shared;
    cudaStream_t stream;
    LaunchConfig(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = 0) : grid(g), block(b), shared(s), stream(st) {}
};

// Host side of a `<<<...>>>` launch (host_api.cpp): checks the sticky error and the
// configuration, runs the grid, records the launch's error for cudaGetLastError.
int host_launch(const GridSpec& spec, cudaStream_t stream);

// The address a kernel argument points to (for the race check's per-launch trace), or null.
template <class T> inline const void* arg_address(const T& v) {
    if constexpr (std::is_pointer_v<T> && std::is_object_v<std::remove_pointer_t<T>>)
        return (const void*)v;
    else
        return nullptr;
}

// What a kernel argument points to, for the race check's comparison of floating-point memory:
// 'f' float, 'd' double, 'i' an integer type, 'o' anything else, '-' not a pointer.
template <class T> inline constexpr char arg_kind() {
    if constexpr (std::is_pointer_v<T> && std::is_object_v<std::remove_pointer_t<T>>) {
        using E = std::remove_cv_t<std::remove_pointer_t<T>>;
        if constexpr (std::is_same_v<E, float>) return 'f';
        else if constexpr (std::is_same_v<E, double>) return 'd';
        else if constexpr (std::is_integral_v<E>) return 'i';
        else return 'o';
    } else {
        return '-';
    }
}

}  // namespace vf
#include "vf_graphs.h"  // deferred launches: stream capture, graph kernel nodes, dynamic parallelism
namespace vf {

// One kernel's thread functions, instantiated once per file and shared by every `<<<...>>>` launch
// of the kernel whose parameter types the front end could name (make_kernel_launch_at) and by its
// by-name shim (KernelShim): `loop` inlines the kernel into the thread loop (flatten), a whole copy
// of it for g++ to optimise, so one such copy per kernel instead of one per launch site and shim.
template <auto K> struct KernelLoop;
template <class... P, void (*K)(P...)> struct KernelLoop<K> {
    using Args = std::tuple<P...>;
    static void one(void* c) { std::apply(K, *static_cast<Args*>(c)); }
    static void loop(void* c) {
        Args params = *static_cast<Args*>(c);  // a local copy: kept in registers
        thread_loop([&]() VF_FLATTEN { std::apply(K, params); });
    }
};
// Kernel K as the owned callable of a deferred launch (an empty object, copied freely).
template <auto K> struct KernelConst {
    template <class... A> void operator()(A&&... a) const { K(static_cast<A&&>(a)...); }
};

template <class F> struct Launcher {
    LaunchConfig cfg;
    const char* name;
    F f;
    const char* file = nullptr;  // where the launch is written (`<<<...>>>`), for the race check
    int line = 0;
    // Arguments by value, as a kernel takes them: binding a reference would odr-use a constant
    // local (`const int n = 1000;`) that a user's lambda around the launch did not capture, which
    // nvcc accepts and g++ would reject.
    template <class... A> int operator()(A... a) {
        using Args = std::tuple<A...>;
        struct Ctx {
            F* f;
            Args* args;
        };
        Args args(std::move(a)...);
        Ctx ctx{&f, &args};
        ThreadFn one = [](void* c) {
            Ctx* x = static_cast<Ctx*>(c);
            std::apply(*x->f, *x->args);
        };
        ThreadFn loop = [](void* c) {
            Ctx* x = static_cast<Ctx*>(c);
            // Local copies: the compiler can keep them in registers across the
            // kernel's stores (user code is built with -fno-strict-aliasing).
            F fn = *x->f;
            Args params = *x->args;
            thread_loop([&]() VF_FLATTEN { std::apply(fn, params); });
        };
        return start(args, &ctx, one, loop, f);
    }
    // A launch of kernel K with its own parameter types (StaticLauncher): KernelLoop<K>'s threads.
    template <auto K, class... P> int launch_kernel(P... p) {
        std::tuple<P...> args(std::move(p)...);
        return start(args, &args, &KernelLoop<K>::one, &KernelLoop<K>::loop, KernelConst<K>{});
    }
    // Runs the grid now, or hands a copy of callable `g` and the arguments over when the launch is
    // deferred (stream capture, a launch from device code).
    template <class G, class... A>
    int start(std::tuple<A...>& args, void* ctx, ThreadFn one, ThreadFn loop, const G& g) {
        const void* addresses[sizeof...(A) + 1] = {};
        std::apply([&](const auto&... v) {
            size_t i = 0;
            ((addresses[i++] = arg_address(v)), ...);
        }, args);
        static constexpr char kinds[sizeof...(A) + 1] = {arg_kind<A>()..., 0};
        GridSpec spec{name, cfg.grid, cfg.block, cfg.shared, one, ctx, false, loop};
        spec.file = file;
        spec.line = line;
        spec.args = addresses;
        spec.nargs = sizeof...(A);
        spec.arg_kinds = kinds;
        if (__builtin_expect(launch_is_deferred(cfg.stream), 0)) {
            // Recorded by a stream capture or launched from device code: runs later, on copies.
            // The callable must not refer to the launching frame: the front end's capture-less
            // lambda around a kernel name, a kernel pointer (cudaLaunchKernel) or KernelConst.
            if constexpr ((std::is_empty_v<G> || std::is_pointer_v<G>) && (std::is_copy_constructible_v<A> && ...))
                return submit_deferred(new OwnedLaunch<G, A...>(spec, g, std::move(args)), cfg.stream);
            else
                return refuse_deferred(name, cfg.stream);
        }
        return host_launch(spec, cfg.stream);
    }
};
template <class F> inline Launcher<F> make_launch(LaunchConfig cfg, const char* name, F f) {
    return Launcher<F>{cfg, name, f};
}
template <class F>
inline Launcher<F> make_launch_at(const char* file, int line, LaunchConfig cfg, const char* name, F f) {
    return Launcher<F>{cfg, name, f, file, line};
}
// A launch of a kernel whose parameter types the front end could name (a kernel that is not a
// template, or a template instantiation with every template argument given), as
// `make_kernel_launch_at<kernel_ptr(&k)>(...)`: the arguments convert to the parameter types at
// the launch, as in a direct call - a literal 0 or NULL for a pointer parameter is a null
// pointer, `{1, 2}` builds a struct - and the grid runs KernelLoop<K>'s threads. A launch with
// fewer arguments (default arguments) keeps deducing them through the lambda `F`.
template <auto K, class F> struct StaticLauncher;
template <class... P, void (*K)(P...), class F> struct StaticLauncher<K, F> {
    Launcher<F> launcher;
    int operator()(P... p) { return launcher.template launch_kernel<K, P...>(static_cast<P&&>(p)...); }
    template <class... A>
        requires(sizeof...(A) != sizeof...(P))
    int operator()(A... a) {
        return launcher(static_cast<A&&>(a)...);
    }
};
template <auto K, class F>
inline StaticLauncher<K, F> make_kernel_launch_at(const char* file, int line, LaunchConfig cfg, const char* name,
                                                  F f) {
    return StaticLauncher<K, F>{Launcher<F>{cfg, name, f, file, line}};
}

// ---- kernels callable by name from Python ----------------------------------------------------
template <class T> inline constexpr char kind_of() {
    if constexpr (std::is_pointer_v<T>) return 'p';
    else if constexpr (std::is_same_v<T, bool>) return 'b';
    else if constexpr (std::is_enum_v<T>) return std::is_signed_v<std::underlying_type_t<T>> ? 'i' : 'u';
    else if constexpr (std::is_integral_v<T>) return std::is_signed_v<T> ? 'i' : 'u';
    else if constexpr (std::is_floating_point_v<T>) return 'f';
    else if constexpr (std::is_void_v<T>) return 'v';
    else return 's';
}
// A parameter type as constants; its name is parsed from __PRETTY_FUNCTION__ by the runtime.
template <class T> inline RawParam raw_param() {
    RawParam p{};
    p.kind = kind_of<T>();
    p.layout = true;
    p.size = sizeof(T);
    p.align = alignof(T);
    p.pretty = __PRETTY_FUNCTION__;  // "vf::RawParam vf::raw_param() [with T = const float*]"
    if constexpr (std::is_pointer_v<T>) {
        using E = std::remove_pointer_t<T>;
        using U = std::remove_cv_t<E>;
        p.pointee_const = std::is_const_v<E>;
        p.pointee_kind = kind_of<U>();
        if constexpr (!std::is_void_v<U> && !std::is_function_v<U>) p.pointee_size = sizeof(U);
    }
    return p;
}
// Only the name, for a type Python cannot pass (a reference, perhaps to an incomplete type).
template <class T> inline RawParam raw_type() {
    RawParam p{};
    p.kind = 's';
    p.pretty = __PRETTY_FUNCTION__;
    return p;
}
template <class T> inline T load_param(const char* blob) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel parameters must be trivially copyable");
    alignas(T) unsigned char buf[sizeof(T)];
    std::memcpy(buf, blob, sizeof(T));
    return *std::launder(reinterpret_cast<T*>(buf));
}

template <class... P> struct KernelRegistrar {
    using Fn = void (*)(P...);
    KernelEntry entry;
    KernelRegistrar(const char* name, Fn fn) {
        const RawParam raw[] = {raw_param<P>()..., RawParam{}};
        init_kernel_entry(entry, name, reinterpret_cast<void*>(fn), raw, sizeof...(P), &run);
    }
    template <size_t... I>
    static std::tuple<P...> unpack(const KernelEntry& e, const char* blob, std::index_sequence<I...>) {
        return std::tuple<P...>(load_param<P>(blob + e.params[I].offset)...);
    }
    static int run(const KernelEntry& e, const char* blob, GridSpec spec) {
        struct Ctx {
            Fn fn;
            std::tuple<P...> args;
        };
        Ctx ctx{reinterpret_cast<Fn>(e.fn), unpack(e, blob, std::index_sequence_for<P...>{})};
        spec.fn = [](void* c) {
            Ctx* x = static_cast<Ctx*>(c);
            std::apply(x->fn, x->args);
        };
        spec.loop = [](void* c) {
            Ctx* x = static_cast<Ctx*>(c);
            Fn fn = x->fn;
            std::tuple<P...> params = x->args;
            thread_loop([&]() VF_FLATTEN { std::apply(fn, params); });
        };
        spec.ctx = &ctx;
        return run_grid(spec);
    }
};

// `&k` as a constant of the kernel's own type: when a kernel shares its name with a function of
// another type (a user's `__global__ void umax(...)` next to CUDA's `umax(unsigned, unsigned)`),
// deduction picks the one overload that returns void, as KernelRegistrar's does.
template <class... P> constexpr auto kernel_ptr(void (*f)(P...)) { return f; }

// The same for a kernel known at compile time (`static KernelShim<kernel_ptr(&k)> shim("k");`): the thread
// loop calls the kernel directly, so g++ can inline it into the loop over the block's threads.
template <auto F> struct KernelShim;
template <class... P, void (*F)(P...)> struct KernelShim<F> {
    KernelEntry entry;
    explicit KernelShim(const char* name) {
        const RawParam raw[] = {raw_param<P>()..., RawParam{}};
        init_kernel_entry(entry, name, reinterpret_cast<void*>(F), raw, sizeof...(P), &run);
    }
    static int run(const KernelEntry& e, const char* blob, GridSpec spec) {
        typename KernelLoop<F>::Args args = KernelRegistrar<P...>::unpack(e, blob, std::index_sequence_for<P...>{});
        spec.fn = &KernelLoop<F>::one;
        spec.loop = &KernelLoop<F>::loop;
        spec.ctx = &args;
        return run_grid(spec);
    }
};
// ---- extern "C" host functions callable by name from Python --------------------------------
// A signature Python can call: by-value trivially copyable parameters (no references), and a
// return value of at most 8 bytes that is void, arithmetic, an enum (cudaError_t) or a 2-byte
// half/bfloat16 struct. Anything else is still listed, with the reason, but not callable - so an
// unusual helper never breaks compiling the module.
template <class T> inline constexpr bool callable_param_v =
    !std::is_reference_v<T> && std::is_trivially_copyable_v<T> && !std::is_array_v<T>;
template <class R> consteval bool callable_return() {
    if constexpr (std::is_void_v<R>) return true;
    else if constexpr (std::is_arithmetic_v<R> || std::is_enum_v<R>) return sizeof(R) <= 8;
    else if constexpr (std::is_class_v<R>) return std::is_trivially_copyable_v<R> && sizeof(R) == 2;
    else return false;
}
template <class R> inline constexpr bool callable_return_v = callable_return<R>();

template <class R, class... P> struct FunctionRegistrar {
    using Fn = R (*)(P...);
    FunctionEntry entry;
    FunctionRegistrar(const char* name, Fn fn) {
        RawParam r{};
        const RawParam* ret = nullptr;
        if constexpr (!std::is_void_v<R>) {
            r = raw_param<R>();
            ret = &r;
        }
        if constexpr ((callable_param_v<P> && ...) && callable_return_v<R>) {
            const RawParam raw[] = {raw_param<P>()..., RawParam{}};
            init_function_entry(entry, name, reinterpret_cast<void*>(fn), ret, raw, sizeof...(P), &call, "");
        } else {
            const RawParam raw[] = {raw_type<P>()..., RawParam{}};
            init_function_entry(entry, name, reinterpret_cast<void*>(fn), ret, raw, sizeof...(P), nullptr,
                                (callable_param_v<P> && ...)
                                    ? "the return type cannot be passed to Python (void, a number, an enum or __half only)"
                                    : "a parameter is a reference, an array or not trivially copyable");
        }
    }
    template <size_t... I>
    static void invoke(const FunctionEntry& e, const char* blob, unsigned char* ret_out, std::index_sequence<I...>) {
        Fn fn = reinterpret_cast<Fn>(e.fn);
        if constexpr (std::is_void_v<R>) {
            fn(load_param<P>(blob + e.params[I].offset)...);
            (void)ret_out;
        } else {
            R r = fn(load_param<P>(blob + e.params[I].offset)...);
            std::memcpy(ret_out, &r, sizeof r);
        }
    }
    static void call(const FunctionEntry& e, const char* blob, unsigned char* ret_out) {
        if constexpr ((callable_param_v<P> && ...) && callable_return_v<R>)
            invoke(e, blob, ret_out, std::index_sequence_for<P...>{});
    }
};

template <class... P> inline KernelRegistrar<P...> make_registrar(const char* name, void (*fn)(P...)) {
    return KernelRegistrar<P...>(name, fn);
}

}  // namespace vf

namespace vf {
// ---- cudaLaunchKernel: a kernel and an array of pointers to its arguments ------------------------
// Each parameter is copied from *args[i] as the kernel's own parameter type - what the CUDA
// runtime does with the kernel's parameter layout.
template <class... P, size_t... I>
inline int launch_from_args(void (*fn)(P...), const char* name, dim3 grid, dim3 block, void** args, size_t shared,
                            cudaStream_t stream, std::index_sequence<I...>) {
    if (sizeof...(P) > 0 && !args) return 1;  // cudaErrorInvalidValue
    return make_launch(LaunchConfig(grid, block, shared, stream), name, fn)(
        *static_cast<std::remove_cv_t<P>*>(args[I])...);
}
template <class... P> struct ArgsLaunchRegistrar {
    ArgsLaunchRegistrar(const char* name, void (*fn)(P...)) {
        register_launchable(reinterpret_cast<const void*>(fn), name, &launch);
        register_deferrer(reinterpret_cast<const void*>(fn), name, &deferred);  // graph kernel nodes
    }
    static DeferredLaunch* deferred(const void* fn, const char* name, dim3 grid, dim3 block, void** args,
                                    size_t shared) {
        return make_deferred_from_args(reinterpret_cast<void (*)(P...)>(fn), name, grid, block, args, shared,
                                       std::index_sequence_for<P...>{});
    }
    static int launch(const void* fn, const char* name, dim3 grid, dim3 block, void** args, size_t shared,
                      cudaStream_t stream) {
        return launch_from_args(reinterpret_cast<void (*)(P...)>(fn), name, grid, block, args, shared, stream,
                                std::index_sequence_for<P...>{});
    }
};
}  // namespace vf

#if !defined(VF_HAVE_CUDA_HEADERS)
extern "C" cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                        cudaStream_t stream);
#endif
// The kernel itself (not cast to void*): its type is known here, so any kernel - a template
// instantiation too - launches without a registry. More specialised than cuda_runtime.h's
// `template <class T> cudaLaunchKernel(T*, ...)`, so overload resolution picks it.
template <class... P>
inline cudaError_t cudaLaunchKernel(void (*func)(P...), dim3 grid, dim3 block, void** args, size_t shared = 0,
                                    cudaStream_t stream = 0) {
    const char* name = "(kernel launched with cudaLaunchKernel)";
    ::vf::ArgsLauncher ignored;
    ::vf::find_launchable(reinterpret_cast<const void*>(func), &name, &ignored);
    return (cudaError_t)::vf::launch_from_args(func, name, grid, block, args, shared, stream,
                                               std::index_sequence_for<P...>{});
}

namespace vf {
// `extern __shared__ T name[];` at namespace scope becomes one of these: it behaves like the
// array (indexing, decay to T*, explicit casts to other pointer types) and always refers to the
// dynamic shared memory of the block the calling thread belongs to.
template <class T> struct DynamicShared {
    T* get() const { return static_cast<T*>(dynamic_shared()); }
    operator T*() const { return get(); }
    template <class U> explicit operator U*() const { return reinterpret_cast<U*>(get()); }
    T& operator[](long long i) const { return get()[i]; }
    T* operator+(long long i) const { return get() + i; }
    T& operator*() const { return *get(); }
};
}  // namespace vf
