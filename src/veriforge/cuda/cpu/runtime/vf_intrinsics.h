// Device intrinsics implemented on the host: barriers, fences, cache-hinted loads, fast math,
// type punning and integer bit tricks. Fast-math variants (__expf, __sinf, ...) use the exact
// libm functions: results differ from a GPU in the last bits, never by more.
#pragma once

// ---- block barriers and fences ---------------------------------------------------------------
inline void __syncthreads(int line = __builtin_LINE()) { ::vf::syncthreads(line); }
inline int __syncthreads_count(int pred, int line = __builtin_LINE()) {
    return ::vf::syncthreads_reduce(0, pred, line);
}
inline int __syncthreads_and(int pred, int line = __builtin_LINE()) {
    return ::vf::syncthreads_reduce(1, pred, line);
}
inline int __syncthreads_or(int pred, int line = __builtin_LINE()) {
    return ::vf::syncthreads_reduce(2, pred, line);
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_signal_fence(std::memory_order_seq_cst); }
[[noreturn]] inline void __trap(int line = __builtin_LINE()) { ::vf::trap("__trap()", line); }
[[noreturn]] inline void __brkpt(int line = __builtin_LINE()) { ::vf::trap("__brkpt()", line); }
inline void __prof_trigger(int) {}
inline void __nanosleep(unsigned) { ::vf::yield_thread(); }
namespace vf {
// Device cycles at the reported clock rate (1.755 GHz), from the monotonic clock; a kernel that
// keeps reading it (a spin-wait) lets the block's other threads run now and then (host_api.cpp).
long long device_clock64();
unsigned long long device_globaltimer();  // nanoseconds
}  // namespace vf
inline long long clock64() { return ::vf::device_clock64(); }
// Device clock() (CUDA's 32-bit %clock, here the same 64-bit count) is the C library's clock()
// redefined in host_api.cpp: it counts device cycles inside a kernel and CPU time in host code.
// Not a CUDA intrinsic (CUDA has only the PTX register): a template, so that a program's own
// `__device__ unsigned long long __globaltimer()` (an asm wrapper) is a better match, not a redefinition.
template <class = void> inline unsigned long long __globaltimer() { return ::vf::device_globaltimer(); }

// ---- cache-hinted loads/stores (plain accesses on the CPU) -----------------------------------
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }
inline unsigned __isGlobal(const void*) { return 1; }
inline unsigned __isShared(const void*) { return 0; }

// ---- min / max overloads as CUDA's math_functions.hpp declares them ---------------------------
#define VF_MINMAX(T)                                              \
    inline T min(T a, T b) { return a < b ? a : b; }               \
    inline T max(T a, T b) { return a > b ? a : b; }
VF_MINMAX(int)
VF_MINMAX(unsigned int)
VF_MINMAX(long)
VF_MINMAX(unsigned long)
VF_MINMAX(long long)
VF_MINMAX(unsigned long long)
#undef VF_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double max(double a, float b) { return fmax(a, b); }
inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
inline long long min(long long a, int b) { return min(a, (long long)b); }
inline long long min(int a, long long b) { return min((long long)a, b); }
inline long long max(long long a, int b) { return max(a, (long long)b); }
inline long long max(int a, long long b) { return max((long long)a, b); }
inline unsigned long long min(unsigned long long a, unsigned b) { return min(a, (unsigned long long)b); }
inline unsigned long long max(unsigned long long a, unsigned b) { return max(a, (unsigned long long)b); }
inline float min(float a, int b) { return fminf(a, (float)b); }
inline float min(int a, float b) { return fminf((float)a, b); }
inline float max(float a, int b) { return fmaxf(a, (float)b); }
inline float max(int a, float b) { return fmaxf((float)a, b); }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

// ---- float math: fast intrinsics and CUDA-only functions -------------------------------------
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = sinf(x); *c = cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline double fdivide(double a, double b) { return a / b; }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
inline float saturate(float x) { return __saturatef(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float sinpif(float x) { return sinf((float)M_PI * x); }
inline float cospif(float x) { return cosf((float)M_PI * x); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
inline void sincospi(double x, double* s, double* c) { *s = sinpi(x); *c = cospi(x); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * (float)M_SQRT1_2); }
inline double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
inline float rhypotf(float x, float y) { return 1.0f / hypotf(x, y); }
inline double rhypot(double x, double y) { return 1.0 / hypot(x, y); }
inline float norm3df(float a, float b, float c) { return sqrtf(a * a + b * b + c * c); }
inline float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
inline float norm4df(float a, float b, float c, float d) { return sqrtf(a * a + b * b + c * c + d * d); }
inline float rnorm4df(float a, float b, float c, float d) { return 1.0f / norm4df(a, b, c, d); }
inline double norm3d(double a, double b, double c) { return sqrt(a * a + b * b + c * c); }
inline double rnorm3d(double a, double b, double c) { return 1.0 / norm3d(a, b, c); }
inline float normf(int n, const float* a) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s += a[i] * a[i];
    return sqrtf(s);
}
inline double vf_erfinv(double y) {
    // Initial guess (Giles' single-precision approximation) refined by two Newton steps on erf.
    if (y <= -1.0) return -INFINITY;
    if (y >= 1.0) return INFINITY;
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) {
        w -= 2.5;
        double p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w; p = 1.50140941 + p * w;
        x = p * y;
    } else {
        w = sqrt(w) - 3.0;
        double p = -0.000200214257;
        p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w; p = 2.83297682 + p * w;
        x = p * y;
    }
    for (int i = 0; i < 2; ++i) x -= (erf(x) - y) / (2.0 / sqrt(M_PI) * exp(-x * x));
    return x;
}
inline float erfinvf(float y) { return (float)vf_erfinv(y); }
inline double erfinv(double y) { return vf_erfinv(y); }
inline float erfcinvf(float y) { return (float)vf_erfinv(1.0 - (double)y); }
inline double erfcinv(double y) { return vf_erfinv(1.0 - y); }
inline double normcdfinv(double p) { return M_SQRT2 * vf_erfinv(2.0 * p - 1.0); }
inline float normcdfinvf(float p) { return (float)normcdfinv(p); }
inline int __finitef(float x) { return std::isfinite(x); }
inline int __isinff(float x) { return std::isinf(x); }
inline int __isnanf(float x) { return std::isnan(x); }
inline int __isinf(double x) { return std::isinf(x); }
inline int __isnan(double x) { return std::isnan(x); }
inline int __finite(double x) { return std::isfinite(x); }
inline int __signbitf(float x) { return std::signbit(x); }

// ---- conversions and type punning -------------------------------------------------------------
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __hiloint2double(int hi, int lo) {
    return std::bit_cast<double>(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo);
}
inline int __double2hiint(double x) { return (int)(std::bit_cast<unsigned long long>(x) >> 32); }
inline int __double2loint(double x) { return (int)(std::bit_cast<unsigned long long>(x) & 0xffffffffu); }

// ---- integer intrinsics -----------------------------------------------------------------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
inline int __mul24(int a, int b) {
    return (int)((long long)((a << 8) >> 8) * (long long)((b << 8) >> 8));
}
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * (long long)b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * (unsigned long long)b) >> 32);
}
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) {
        unsigned sel = (s >> (4 * i)) & 7u;
        r |= (unsigned)((v >> (8 * sel)) & 0xffu) << (8 * i);
    }
    return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned)((v << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned)((v << (shift > 32u ? 32u : shift)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned)(v >> (shift & 31u));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned)(v >> (shift > 32u ? 32u : shift));
}
inline unsigned __sad(int x, int y, unsigned z) { return (unsigned)(x > y ? x - y : y - x) + z; }
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return (x > y ? x - y : y - x) + z; }
inline int __hadd(int x, int y) { return (int)(((long long)x + y) >> 1); }
inline int __rhadd(int x, int y) { return (int)(((long long)x + y + 1) >> 1); }
inline unsigned __uhadd(unsigned x, unsigned y) { return (unsigned)(((unsigned long long)x + y) >> 1); }
inline unsigned __urhadd(unsigned x, unsigned y) {
    return (unsigned)(((unsigned long long)x + y + 1) >> 1);
}
inline int __dp4a(int a, int b, int c) {
    for (int i = 0; i < 4; ++i) c += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
    return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
    for (int i = 0; i < 4; ++i) c += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu);
    return c;
}
inline int __dp2a_lo(int a, int b, int c) {
    for (int i = 0; i < 2; ++i) c += (int)(short)(a >> (16 * i)) * (int)(signed char)(b >> (8 * i));
    return c;
}
inline int __dp2a_hi(int a, int b, int c) {
    for (int i = 0; i < 2; ++i) c += (int)(short)(a >> (16 * i)) * (int)(signed char)(b >> (8 * (i + 2)));
    return c;
}
