"""Textures and surfaces on the CPU runtime (runtime/vf_texture.h, textures.cpp).

Expected values are computed by hand from the CUDA Programming Guide's texture-fetching appendix:
point sampling takes T[floor(x)]; linear filtering takes (1 - a) T[i] + a T[i + 1] with
i = floor(x - 0.5) and the weight a = frac(x - 0.5) in 9-bit fixed point (8 fraction bits), so
a = round(256 frac) / 256 - which is why e.g. x = 1.3 between 10 and 20 gives 18.0078125, not 18.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from veriforge.cuda import cpu

SAMPLING = r"""
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("error %s at line %d\n", cudaGetErrorString(e_), __LINE__); return 1; } } while (0)

// One launch per probe list: out[i] = fetch at coordinates xs[i] (and ys, zs).
__global__ void fetch1d(cudaTextureObject_t t, const float* xs, float* out, int n) {
    int i = threadIdx.x;
    if (i < n) out[i] = tex1D<float>(t, xs[i]);
}
__global__ void fetch2d(cudaTextureObject_t t, const float* xs, const float* ys, float* out, int n) {
    int i = threadIdx.x;
    if (i < n) out[i] = tex2D<float>(t, xs[i], ys[i]);
}
__global__ void misc(cudaTextureObject_t t3d, cudaTextureObject_t layered, cudaTextureObject_t cube,
                     cudaTextureObject_t gath, cudaTextureObject_t mip, cudaTextureObject_t pitch,
                     cudaTextureObject_t lin, cudaTextureObject_t one, float* out) {
    out[0] = tex3D<float>(t3d, 0.75f, 1.0f, 1.25f);
    out[1] = tex2DLayered<float>(layered, 1.5f, 0.5f, 1);
    out[2] = tex2DLayered<float>(layered, 1.0f, 1.0f, 1);
    out[3] = tex2DLayered<float>(layered, 0.5f, 1.5f, 0);
    out[4] = texCubemap<float>(cube, 1.0f, 0.1f, -0.2f);
    out[5] = texCubemap<float>(cube, -1.0f, -0.5f, -0.5f);
    out[6] = texCubemap<float>(cube, -0.5f, 1.0f, 0.6f);
    out[7] = texCubemap<float>(cube, 0.3f, -1.0f, 0.5f);
    out[8] = texCubemap<float>(cube, 0.5f, 0.5f, 1.0f);
    out[9] = texCubemap<float>(cube, -0.2f, 0.4f, -1.0f);
    float4 g = tex2Dgather<float4>(gath, 1.0f, 1.0f, 0);
    out[10] = g.x; out[11] = g.y; out[12] = g.z; out[13] = g.w;
    out[14] = tex2DLod<float>(mip, 0.5f, 0.5f, 1.0f);
    out[15] = tex2DLod<float>(mip, 0.5f, 0.5f, 2.0f);
    out[16] = tex2DLod<float>(mip, 0.5f, 0.5f, 0.4f);
    out[17] = tex2DLod<float>(mip, 0.5f, 0.5f, 0.6f);
    out[18] = tex2D<float>(mip, 0.5f, 0.5f);
    out[19] = tex2D<float>(pitch, 4.5f, 2.5f);
    out[20] = tex2D<float>(pitch, 0.5f, 1.5f);
    out[21] = tex1Dfetch<float>(lin, 2);
    out[22] = tex1Dfetch<float>(lin, 4);
    out[23] = tex1Dfetch<float>(lin, -1);
    float4 m = tex1D<float4>(one, 1.5f);            // a one-channel texture read as float4
    out[24] = m.x; out[25] = m.y; out[26] = m.z; out[27] = m.w;
    float v;
    tex2D(&v, pitch, 1.5f, 0.5f);                   // the out-parameter form
    out[28] = v;
}
__global__ void normalized(cudaTextureObject_t u8, cudaTextureObject_t s8, cudaTextureObject_t u16,
                           cudaTextureObject_t s16, cudaTextureObject_t u8lin, cudaTextureObject_t i32,
                           cudaTextureObject_t u8x4, cudaTextureObject_t u8elem, cudaTextureObject_t srgb,
                           cudaTextureObject_t half, float* out, int* iout) {
    for (int i = 0; i < 5; ++i) out[20 + i] = tex1D<float>(half, i + 0.5f);
    for (int i = 0; i < 4; ++i) out[i] = tex1D<float>(u8, i + 0.5f);
    for (int i = 0; i < 5; ++i) out[4 + i] = tex1D<float>(s8, i + 0.5f);
    out[9] = tex1D<float>(u16, 0.5f);
    out[10] = tex1D<float>(u16, 1.5f);
    out[11] = tex1D<float>(s16, 0.5f);
    out[12] = tex1D<float>(s16, 1.5f);
    out[13] = tex1D<float>(u8lin, 1.0f);    // halfway between 0 and 255
    out[14] = tex1D<float>(u8lin, 1.3f);
    float4 c = tex2D<float4>(u8x4, 0.5f, 0.5f);
    out[15] = c.x; out[16] = c.y; out[17] = c.z; out[18] = c.w;
    out[19] = tex1D<float>(srgb, 0.5f);
    iout[0] = tex1D<int>(i32, 0.5f);         // 32-bit integers are not promoted to float
    iout[1] = tex1D<int>(i32, 1.5f);
    uchar4 e = tex2D<uchar4>(u8elem, 0.5f, 0.5f);
    iout[2] = e.x; iout[3] = e.y; iout[4] = e.z; iout[5] = e.w;
    iout[6] = tex1Dfetch<unsigned char>(u8, 0);
}

static cudaTextureObject_t texture_of(cudaArray_t a, cudaTextureDesc td) {
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureObject_t t = 0;
    cudaError_t e = cudaCreateTextureObject(&t, &r, &td, nullptr);
    if (e != cudaSuccess) printf("create failed: %s\n", cudaGetErrorString(e));
    return t;
}
static cudaTextureDesc desc_of(cudaTextureAddressMode m, cudaTextureFilterMode f, int norm,
                               cudaTextureReadMode rm = cudaReadModeElementType) {
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = m;
    td.filterMode = f;
    td.normalizedCoords = norm;
    td.readMode = rm;
    return td;
}
template <class T> static cudaArray_t array1d(const T* v, int n) {
    cudaChannelFormatDesc d = cudaCreateChannelDesc<T>();
    cudaArray_t a;
    cudaMallocArray(&a, &d, n);
    cudaMemcpy2DToArray(a, 0, 0, v, n * sizeof(T), n * sizeof(T), 1, cudaMemcpyHostToDevice);
    return a;
}
static void print(const char* name, const float* d, int n) {
    float h[64];
    cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    printf("%s", name);
    for (int i = 0; i < n; ++i) printf(" %.9g", h[i]);
    printf("\n");
}

int main() {
    float *xs, *ys, *out;
    int* iout;
    CHECK(cudaMallocManaged(&xs, 64 * 4));
    CHECK(cudaMallocManaged(&ys, 64 * 4));
    CHECK(cudaMalloc(&out, 64 * 4));
    CHECK(cudaMalloc(&iout, 64 * 4));

    // 1D: T = 10, 20, 40, 80; point and linear, every address mode, (un)normalized coordinates.
    const float T[4] = {10, 20, 40, 80};
    cudaArray_t a1 = array1d(T, 4);
    struct Case { const char* name; cudaTextureAddressMode m; cudaTextureFilterMode f; int norm; int n; float x[12]; };
    const Case cases[] = {
        {"point_clamp", cudaAddressModeClamp, cudaFilterModePoint, 0, 5, {-1.5f, 0.99f, 1.0f, 3.5f, 7.0f}},
        {"point_border", cudaAddressModeBorder, cudaFilterModePoint, 0, 3, {-0.01f, 4.0f, 3.99f}},
        {"point_wrap_unnormalized", cudaAddressModeWrap, cudaFilterModePoint, 0, 2, {5.0f, -3.0f}},
        {"point_wrap", cudaAddressModeWrap, cudaFilterModePoint, 1, 3, {1.3f, -0.1f, 2.0f}},
        {"point_mirror", cudaAddressModeMirror, cudaFilterModePoint, 1, 4, {1.3f, -0.1f, 0.6f, 2.2f}},
        {"point_clamp_normalized", cudaAddressModeClamp, cudaFilterModePoint, 1, 3, {1.0f, -0.5f, 0.5f}},
        {"point_border_normalized", cudaAddressModeBorder, cudaFilterModePoint, 1, 2, {1.0f, 0.999f}},
        {"linear_clamp", cudaAddressModeClamp, cudaFilterModeLinear, 0, 7,
         {1.3f, 2.5f, 0.25f, 4.0f, 1.5f + 1.0f / 1024, 1.5f + 1.5f / 512, 2.499f}},
        {"linear_border", cudaAddressModeBorder, cudaFilterModeLinear, 0, 2, {0.25f, 4.25f}},
        {"linear_wrap", cudaAddressModeWrap, cudaFilterModeLinear, 1, 2, {0.0f, 1.0f}},
        {"linear_mirror", cudaAddressModeMirror, cudaFilterModeLinear, 1, 2, {0.0f, 1.0f}},
    };
    for (const Case& c : cases) {
        cudaTextureDesc td = desc_of(c.m, c.f, c.norm);
        td.borderColor[0] = -1.0f;
        cudaTextureObject_t t = texture_of(a1, td);
        for (int i = 0; i < c.n; ++i) xs[i] = c.x[i];
        fetch1d<<<1, 32>>>(t, xs, out, c.n);
        CHECK(cudaDeviceSynchronize());
        print(c.name, out, c.n);
        CHECK(cudaDestroyTextureObject(t));
    }

    // 2D bilinear on [[1, 2], [3, 4]] (rows y = 0, 1).
    const float T2[4] = {1, 2, 3, 4};
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t a2;
    CHECK(cudaMallocArray(&a2, &fd, 2, 2));
    CHECK(cudaMemcpyToArray(a2, 0, 0, T2, sizeof T2, cudaMemcpyHostToDevice));
    cudaTextureObject_t t2 = texture_of(a2, desc_of(cudaAddressModeClamp, cudaFilterModeLinear, 0));
    xs[0] = 1.25f; ys[0] = 0.75f;
    xs[1] = 0.8f;  ys[1] = 1.1f;
    xs[2] = 0.0f;  ys[2] = 5.0f;
    fetch2d<<<1, 32>>>(t2, xs, ys, out, 3);
    CHECK(cudaDeviceSynchronize());
    print("bilinear", out, 3);
    cudaTextureDesc nd = desc_of(cudaAddressModeWrap, cudaFilterModeLinear, 1);
    cudaTextureObject_t t2n = texture_of(a2, nd);
    xs[0] = 0.0f; ys[0] = 0.0f;
    xs[1] = 0.5f; ys[1] = 0.5f;
    fetch2d<<<1, 32>>>(t2n, xs, ys, out, 2);
    CHECK(cudaDeviceSynchronize());
    print("bilinear_wrap", out, 2);

    // 3D 2x2x2, T = x + 2y + 4z; trilinear at (0.75, 1.0, 1.25) = 0.25 + 2 * 0.5 + 4 * 0.75.
    float T3[8];
    for (int i = 0; i < 8; ++i) T3[i] = (i & 1) + 2 * ((i >> 1) & 1) + 4 * (i >> 2);   // x + 2y + 4z
    cudaArray_t a3;
    CHECK(cudaMalloc3DArray(&a3, &fd, make_cudaExtent(2, 2, 2)));
    cudaMemcpy3DParms p3;
    memset(&p3, 0, sizeof p3);
    p3.srcPtr = make_cudaPitchedPtr(T3, 2 * sizeof(float), 2, 2);
    p3.dstArray = a3;
    p3.extent = make_cudaExtent(2, 2, 2);
    p3.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&p3));
    cudaTextureObject_t t3 = texture_of(a3, desc_of(cudaAddressModeClamp, cudaFilterModeLinear, 0));

    // Layered 2x2, 2 layers: layer 0 = [[1,2],[3,4]], layer 1 = [[10,20],[30,40]].
    const float TL[8] = {1, 2, 3, 4, 10, 20, 30, 40};
    cudaArray_t al;
    CHECK(cudaMalloc3DArray(&al, &fd, make_cudaExtent(2, 2, 2), cudaArrayLayered));
    memset(&p3, 0, sizeof p3);
    p3.srcPtr = make_cudaPitchedPtr((void*)TL, 2 * sizeof(float), 2, 2);
    p3.dstArray = al;
    p3.extent = make_cudaExtent(2, 2, 2);
    p3.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&p3));
    cudaTextureDesc ld = desc_of(cudaAddressModeClamp, cudaFilterModePoint, 0);
    cudaTextureObject_t tl_point = texture_of(al, ld);
    ld.filterMode = cudaFilterModeLinear;
    cudaTextureObject_t tl_lin = texture_of(al, ld);
    cudaExtent ext;
    unsigned flags = 0;
    cudaChannelFormatDesc got;
    CHECK(cudaArrayGetInfo(&got, &ext, &flags, al));
    printf("layered_info %d %d %d %u %d %d\n", (int)ext.width, (int)ext.height, (int)ext.depth, flags, got.x,
           (int)got.f);

    // Cubemap 2x2, texel (x, y) of face f = 100 f + 10 y + x.
    float TC[24];
    for (int i = 0; i < 24; ++i) TC[i] = 100 * (i / 4) + 10 * ((i / 2) % 2) + i % 2;
    cudaArray_t ac;
    CHECK(cudaMalloc3DArray(&ac, &fd, make_cudaExtent(2, 2, 6), cudaArrayCubemap));
    memset(&p3, 0, sizeof p3);
    p3.srcPtr = make_cudaPitchedPtr(TC, 2 * sizeof(float), 2, 2);
    p3.dstArray = ac;
    p3.extent = make_cudaExtent(2, 2, 6);
    p3.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&p3));
    cudaTextureObject_t tc = texture_of(ac, desc_of(cudaAddressModeClamp, cudaFilterModePoint, 1));

    // Gather on [[1,2],[3,4]].
    cudaArray_t ag;
    CHECK(cudaMallocArray(&ag, &fd, 2, 2, cudaArrayTextureGather));
    CHECK(cudaMemcpy2DToArray(ag, 0, 0, T2, 8, 8, 2, cudaMemcpyHostToDevice));
    cudaTextureObject_t tg = texture_of(ag, desc_of(cudaAddressModeClamp, cudaFilterModePoint, 0));

    // Mipmapped 4x4 -> 2x2 -> 1x1 holding 1, 2, 3.
    cudaMipmappedArray_t mm;
    CHECK(cudaMallocMipmappedArray(&mm, &fd, make_cudaExtent(4, 4, 0), 3));
    for (unsigned l = 0; l < 3; ++l) {
        cudaArray_t lv;
        CHECK(cudaGetMipmappedArrayLevel(&lv, mm, l));
        int w = 4 >> l;
        float v[16];
        for (int i = 0; i < 16; ++i) v[i] = (float)(l + 1);
        CHECK(cudaMemcpy2DToArray(lv, 0, 0, v, w * 4, w * 4, w, cudaMemcpyHostToDevice));
    }
    cudaResourceDesc mr;
    memset(&mr, 0, sizeof mr);
    mr.resType = cudaResourceTypeMipmappedArray;
    mr.res.mipmap.mipmap = mm;
    cudaTextureDesc md = desc_of(cudaAddressModeClamp, cudaFilterModePoint, 1);
    md.maxMipmapLevelClamp = 2;
    cudaTextureObject_t tm;
    CHECK(cudaCreateTextureObject(&tm, &mr, &md, nullptr));
    md.mipmapFilterMode = cudaFilterModeLinear;
    cudaTextureObject_t tm_lin;
    CHECK(cudaCreateTextureObject(&tm_lin, &mr, &md, nullptr));

    // Pitch2D: 5 x 3 floats, value 10 y + x.
    float* dp;
    size_t pitch;
    CHECK(cudaMallocPitch(&dp, &pitch, 5 * sizeof(float), 3));
    float hp[15];
    for (int y = 0; y < 3; ++y) for (int x = 0; x < 5; ++x) hp[y * 5 + x] = 10 * y + x;
    CHECK(cudaMemcpy2D(dp, pitch, hp, 20, 20, 3, cudaMemcpyHostToDevice));
    cudaResourceDesc pr;
    memset(&pr, 0, sizeof pr);
    pr.resType = cudaResourceTypePitch2D;
    pr.res.pitch2D.devPtr = dp;
    pr.res.pitch2D.desc = fd;
    pr.res.pitch2D.width = 5;
    pr.res.pitch2D.height = 3;
    pr.res.pitch2D.pitchInBytes = pitch;
    cudaTextureDesc pd = desc_of(cudaAddressModeClamp, cudaFilterModePoint, 0);
    cudaTextureObject_t tp;
    CHECK(cudaCreateTextureObject(&tp, &pr, &pd, nullptr));

    // Linear memory: 4 floats.
    float* dl;
    CHECK(cudaMalloc(&dl, 16));
    CHECK(cudaMemcpy(dl, T, 16, cudaMemcpyHostToDevice));
    cudaResourceDesc lr;
    memset(&lr, 0, sizeof lr);
    lr.resType = cudaResourceTypeLinear;
    lr.res.linear.devPtr = dl;
    lr.res.linear.desc = fd;
    lr.res.linear.sizeInBytes = 16;
    cudaTextureObject_t tlin;
    CHECK(cudaCreateTextureObject(&tlin, &lr, &pd, nullptr));
    cudaResourceDesc back;
    CHECK(cudaGetTextureObjectResourceDesc(&back, tlin));
    printf("resource_desc %d %d %d\n", (int)back.resType, back.res.linear.devPtr == dl,
           (int)back.res.linear.sizeInBytes);

    cudaTextureObject_t one = texture_of(a1, desc_of(cudaAddressModeClamp, cudaFilterModePoint, 0));
    misc<<<1, 1>>>(t3, tl_point, tc, tg, tm, tp, tlin, one, out);
    CHECK(cudaDeviceSynchronize());
    print("misc", out, 29);
    misc<<<1, 1>>>(t3, tl_lin, tc, tg, tm_lin, tp, tlin, tlin, out);
    CHECK(cudaDeviceSynchronize());
    print("misc_linear", out, 19);

    // Read modes and integer formats.
    const unsigned char u8v[4] = {0, 51, 128, 255};
    const signed char s8v[5] = {-128, -127, 0, 64, 127};
    const unsigned short u16v[2] = {65535, 32768};
    const short s16v[2] = {-32768, 16384};
    const unsigned char u8l[2] = {0, 255};
    const int i32v[2] = {-7, 123456789};
    cudaTextureDesc nf = desc_of(cudaAddressModeClamp, cudaFilterModePoint, 0, cudaReadModeNormalizedFloat);
    cudaTextureObject_t tu8 = texture_of(array1d(u8v, 4), nf);
    cudaTextureObject_t ts8 = texture_of(array1d(s8v, 5), nf);
    cudaTextureObject_t tu16 = texture_of(array1d(u16v, 2), nf);
    cudaTextureObject_t ts16 = texture_of(array1d(s16v, 2), nf);
    cudaTextureObject_t ti32 = texture_of(array1d(i32v, 2), nf);
    cudaTextureDesc nl = desc_of(cudaAddressModeClamp, cudaFilterModeLinear, 0, cudaReadModeNormalizedFloat);
    cudaTextureObject_t tu8lin = texture_of(array1d(u8l, 2), nl);
    const uchar4 px = make_uchar4(0, 64, 128, 255);
    cudaChannelFormatDesc d4 = cudaCreateChannelDesc<uchar4>();
    cudaArray_t a4;
    CHECK(cudaMallocArray(&a4, &d4, 1, 1));
    CHECK(cudaMemcpy2DToArray(a4, 0, 0, &px, 4, 4, 1, cudaMemcpyHostToDevice));
    cudaTextureObject_t tu8x4 = texture_of(a4, nf);
    cudaTextureObject_t tu8elem = texture_of(a4, desc_of(cudaAddressModeClamp, cudaFilterModePoint, 0));
    const unsigned char mid[1] = {128};
    cudaTextureDesc sd = nf;
    sd.sRGB = 1;
    cudaTextureObject_t tsrgb = texture_of(array1d(mid, 1), sd);
    // 16-bit floats: 1, -2.5, 65504, the smallest subnormal 2^-24, infinity
    const unsigned short hv[5] = {0x3C00, 0xC100, 0x7BFF, 0x0001, 0x7C00};
    cudaChannelFormatDesc hd = cudaCreateChannelDescHalf();
    cudaArray_t ah;
    CHECK(cudaMallocArray(&ah, &hd, 5));
    CHECK(cudaMemcpy2DToArray(ah, 0, 0, hv, 10, 10, 1, cudaMemcpyHostToDevice));
    cudaTextureObject_t thalf = texture_of(ah, desc_of(cudaAddressModeClamp, cudaFilterModePoint, 0));
    normalized<<<1, 1>>>(tu8, ts8, tu16, ts16, tu8lin, ti32, tu8x4, tu8elem, tsrgb, thalf, out, iout);
    CHECK(cudaDeviceSynchronize());
    print("normalized", out, 20);
    print("half", out + 20, 5);
    int hi[7];
    CHECK(cudaMemcpy(hi, iout, sizeof hi, cudaMemcpyDeviceToHost));
    printf("elements %d %d %d %d %d %d %d\n", hi[0], hi[1], hi[2], hi[3], hi[4], hi[5], hi[6]);

    // Copies out of arrays: a 3D sub-box back to the host, a 2D region, a linear run.
    float box[4] = {0, 0, 0, 0};
    memset(&p3, 0, sizeof p3);
    p3.srcArray = a3;
    p3.srcPos = make_cudaPos(1, 0, 0);
    p3.dstPtr = make_cudaPitchedPtr(box, sizeof(float), 1, 2);
    p3.extent = make_cudaExtent(1, 2, 2);
    p3.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&p3));
    float row[2];
    CHECK(cudaMemcpy2DFromArray(row, 8, a2, 0, 1, 8, 1, cudaMemcpyDeviceToHost));
    float run[3];
    CHECK(cudaMemcpyFromArray(run, a2, 4, 0, 12, cudaMemcpyDeviceToHost));
    printf("copies %g %g %g %g %g %g %g %g %g\n", box[0], box[1], box[2], box[3], row[0], row[1], run[0], run[1],
           run[2]);
    // Array to array: row 1 of a2 into row 0 of b; the 3D array a3 into c, back to the host.
    cudaArray_t b, c;
    CHECK(cudaMallocArray(&b, &fd, 2, 2));
    CHECK(cudaMemcpy2DArrayToArray(b, 0, 0, a2, 0, 1, 8, 1, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy2DFromArray(row, 8, b, 0, 0, 8, 1, cudaMemcpyDeviceToHost));
    CHECK(cudaMalloc3DArray(&c, &fd, make_cudaExtent(2, 2, 2)));
    memset(&p3, 0, sizeof p3);
    p3.srcArray = a3;
    p3.dstArray = c;
    p3.extent = make_cudaExtent(2, 2, 2);
    p3.kind = cudaMemcpyDeviceToDevice;
    CHECK(cudaMemcpy3D(&p3));
    float all[8];
    memset(&p3, 0, sizeof p3);
    p3.srcArray = c;
    p3.dstPtr = make_cudaPitchedPtr(all, 2 * sizeof(float), 2, 2);
    p3.extent = make_cudaExtent(2, 2, 2);
    p3.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&p3));
    printf("array_copies %g %g", row[0], row[1]);
    for (float v : all) printf(" %g", v);
    printf("\n");
    printf("done\n");
    return 0;
}
"""


def _values(stdout: str) -> dict[str, list[float]]:
    rows = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) > 1 and re.fullmatch(r"[a-z_0-9]+", parts[0]):
            try:
                rows[parts[0]] = [int(p) if re.fullmatch(r"-?\d+", p) else float(np.float32(p))  # %.9g round-trips
                                  for p in parts[1:]]
            except ValueError:
                pass
    return rows


@pytest.fixture(scope="module")
def sampled(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(SAMPLING, filename="sampling.cu", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "done" in res.stdout and "error" not in res.stdout and "failed" not in res.stdout, res.stdout
    return _values(res.stdout)


def f32(*v: float) -> list[float]:
    return [float(np.float32(x)) for x in v]


def test_point_sampling_in_every_address_mode(sampled):
    # unnormalized: i = floor(x), clamped to [0, 3] / border colour -1 outside
    assert sampled["point_clamp"] == [10, 10, 20, 80, 80]
    assert sampled["point_border"] == [-1, -1, 80]
    # wrap and mirror need normalized coordinates; CUDA switches them to clamp otherwise
    assert sampled["point_wrap_unnormalized"] == [80, 10]
    # normalized: wrap x -> frac(x), mirror reflects at every integer, then i = floor(4 x)
    assert sampled["point_wrap"] == [20, 80, 10]          # 1.3 -> 0.3 -> 1.2; -0.1 -> 0.9 -> 3.6; 2 -> 0
    assert sampled["point_mirror"] == [40, 10, 40, 10]    # 1.3 -> 0.7 -> 2.8; -0.1 -> 0.1; 0.6; 2.2 -> 0.2
    assert sampled["point_clamp_normalized"] == [80, 10, 40]  # x = 1 reads the last texel (1 - 1/N)
    assert sampled["point_border_normalized"] == [-1, 80]


def test_linear_filtering_uses_the_9_bit_weight(sampled):
    assert sampled["linear_clamp"] == [
        18.0078125,  # x = 1.3: xB = 0.8, a = round(204.8) / 256 = 205/256: 10 (51/256) + 20 (205/256)
        40,          # x = 2.5: at the texel centre
        10,          # x = 0.25: T[-1] clamps to T[0]
        80,          # x = 4.0: T[3] and T[4 -> 3]
        20,          # a = 1/1024 rounds to 0
        20.078125,   # a = 1.5/512 rounds to 1/256: 20 (255/256) + 40/256
        40,          # x = 2.499: a = 0.999 rounds to 256/256 (the 9th bit): T[2] only
    ]
    assert sampled["linear_border"] == [7.25, 19.25]  # 0.25 (-1) + 0.75 * 10; 0.25 * 80 + 0.75 (-1)
    # normalized x = 0 is texel-space 0: halfway between T[-1] (wrap: T[3], mirror: T[0]) and T[0]
    assert sampled["linear_wrap"] == [45, 45]
    assert sampled["linear_mirror"] == [10, 80]


def test_bilinear_2d(sampled):
    # (1.25, 0.75): a = 0.75, b = 0.25 -> 1 + a + 2b = 2.25
    # (0.8, 1.1): a = round(0.3 * 256) = 77/256, b = round(0.6 * 256) = 154/256 -> 1 + 77/256 + 308/256
    assert sampled["bilinear"] == [2.25, 1 + 385 / 256, 3]  # (0, 5): clamped to row 1
    # normalized wrap at (0, 0): the four corners [[4, 3], [2, 1]] average 2.5; (0.5, 0.5) is the centre too
    assert sampled["bilinear_wrap"] == [2.5, 2.5]


def test_3d_layered_cubemap_gather_mipmaps_pitch_and_linear_resources(sampled):
    m = sampled["misc"]
    assert m[0] == 4.25                       # trilinear x + 2y + 4z at (0.25, 0.5, 0.75) texel weights
    assert m[1:4] == [20, 40, 3]              # layer 1: (1.5, 0.5) -> x=1 y=0, (1, 1); layer 0 (0.5, 1.5)
    assert m[4:10] == [1, 110, 210, 301, 401, 501]  # the Guide's cubemap face table
    assert m[10:14] == [3, 4, 2, 1]           # gather order (i, j+1), (i+1, j+1), (i+1, j), (i, j)
    assert m[14:19] == [2, 3, 1, 2, 1]        # tex2DLod: nearest level; tex2D reads level 0
    assert m[19:21] == [24, 10]               # pitch2D 10 y + x
    assert m[21:24] == [40, 0, 0]             # tex1Dfetch on linear memory: zero outside
    assert m[24:28] == [20, 0, 0, 1]          # a missing channel reads 0, a missing alpha 1
    assert m[28] == 1                         # tex2D(&v, ...) out-parameter form
    lin = sampled["misc_linear"]
    assert lin[2] == 25                       # layered bilinear in the middle of layer 1
    # linear mipmap filtering between levels 0 (1.0) and 1 (2.0), the level fraction in 8 bits like texels
    assert lin[16:18] == [1 + 102 / 256, 1 + 154 / 256]  # lod 0.4, 0.6
    assert lin[14:16] == [2, 3]
    assert sampled["layered_info"] == [2, 2, 2, 1, 32, 2]   # extent, cudaArrayLayered, 32-bit float
    assert sampled["resource_desc"] == [2, 1, 16]


def test_read_modes_and_integer_formats(sampled):
    n = sampled["normalized"]
    assert n[0:4] == f32(0, np.float32(51) / np.float32(255), np.float32(128) / np.float32(255), 1)
    # signed: v / 127 clamped to -1 (-128 and -127 both read -1)
    assert n[4:9] == f32(-1, -1, 0, np.float32(64) / np.float32(127), 1)
    assert n[9:11] == f32(1, np.float32(32768) / np.float32(65535))
    assert n[11:13] == f32(-1, np.float32(16384) / np.float32(32767))
    assert n[13] == 0.5                               # linear between 0 and 1 at a = 0.5
    assert n[14] == f32(np.float32(205 / 256))[0]     # x = 1.3: a = 205/256 of (0 -> 1)
    assert n[15:19] == f32(0, np.float32(64) / np.float32(255), np.float32(128) / np.float32(255), 1)
    assert n[19] == pytest.approx(((128 / 255 + 0.055) / 1.055) ** 2.4, rel=1e-6)   # sRGB -> linear
    # 32-bit integers are returned as they are; element reads of uchar4 give the bytes
    assert sampled["elements"] == [-7, 123456789, 0, 64, 128, 255, 0]


def test_half_float_textures(sampled):
    assert sampled["half"] == [1, -2.5, 65504, 2.0**-24, float("inf")]


def test_array_copies(sampled):
    # cudaMemcpy3D of x = 1, y = 0..1, z = 0..1 from x + 2y + 4z; a 2D row; a linear run from byte 4
    assert sampled["copies"] == [1, 3, 5, 7, 3, 4, 2, 3, 4]
    # array to array: a 2D row, then a whole 3D array (x + 2y + 4z) copied and read back
    assert sampled["array_copies"] == [3, 4, 0, 1, 2, 3, 4, 5, 6, 7]


SURFACES = r"""
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("error %s at line %d\n", cudaGetErrorString(e_), __LINE__); return 1; } } while (0)

__global__ void write2d(cudaSurfaceObject_t s, int w, int h) {
    int x = threadIdx.x, y = threadIdx.y;
    if (x < w && y < h) surf2Dwrite(10.0f * y + x, s, x * 4, y);      // x in bytes, as in CUDA
}
__global__ void boundaries(cudaSurfaceObject_t s, float* out) {
    out[0] = surf2Dread<float>(s, 2 * 4, 1);
    out[1] = surf2Dread<float>(s, -8, 7, cudaBoundaryModeClamp);      // -> (0, 2)
    out[2] = surf2Dread<float>(s, 400, 0, cudaBoundaryModeZero);      // -> 0
    surf2Dwrite(-1.0f, s, 100, -5, cudaBoundaryModeClamp);            // -> (3, 0)
    surf2Dwrite(-2.0f, s, 400, 0, cudaBoundaryModeZero);              // dropped
    float v;
    surf2Dread(&v, s, 4, 2);                                          // out-parameter form
    out[3] = v;
}
__global__ void others(cudaSurfaceObject_t s1, cudaSurfaceObject_t s3, cudaSurfaceObject_t sl,
                       cudaSurfaceObject_t sc, cudaSurfaceObject_t s4, int* out) {
    int i = threadIdx.x;
    surf1Dwrite(i * 3, s1, i * 4);
    surf3Dwrite((short)(100 * i), s3, (i % 2) * 2, (i / 2) % 2, i / 4);
    surf2DLayeredwrite(1000 + i, sl, 0, 0, i % 3);
    surfCubemapwrite(i, sc, 0, 0, i % 6);
    if (i == 0) surf2Dwrite(make_uchar4(1, 2, 3, 4), s4, 4, 1);
    __syncthreads();
    if (i == 0) {
        out[0] = surf1Dread<int>(s1, 7 * 4);
        out[1] = surf3Dread<short>(s3, 2, 1, 1);
        out[2] = surf2DLayeredread<int>(sl, 0, 0, 2);
        out[3] = surfCubemapread<int>(sc, 0, 0, 5);
        uchar4 c = surf2Dread<uchar4>(s4, 4, 1);
        out[4] = c.x * 1000 + c.y * 100 + c.z * 10 + c.w;
    }
}
__global__ void through_texture(cudaTextureObject_t t, float* out) {
    out[threadIdx.x] = tex2D<float>(t, threadIdx.x + 0.5f, 1.5f);
}

static cudaSurfaceObject_t surface_of(cudaArray_t a) {
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaSurfaceObject_t s = 0;
    cudaError_t e = cudaCreateSurfaceObject(&s, &r);
    if (e != cudaSuccess) printf("surface failed: %s\n", cudaGetErrorString(e));
    return s;
}

int main() {
    vf::enable_device_guard();   // arrays are device memory: host code cannot touch them either
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    CHECK(cudaMallocArray(&a, &fd, 4, 3, cudaArraySurfaceLoadStore));
    cudaSurfaceObject_t s = surface_of(a);
    write2d<<<1, dim3(4, 3)>>>(s, 4, 3);
    CHECK(cudaDeviceSynchronize());
    float h[12];
    CHECK(cudaMemcpy2DFromArray(h, 16, a, 0, 0, 16, 3, cudaMemcpyDeviceToHost));
    printf("written");
    for (float v : h) printf(" %g", v);
    printf("\n");
    float* out;
    CHECK(cudaMallocManaged(&out, 64));
    boundaries<<<1, 1>>>(s, out);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy2DFromArray(h, 16, a, 0, 0, 16, 3, cudaMemcpyDeviceToHost));
    printf("boundaries %g %g %g %g %g %g\n", out[0], out[1], out[2], out[3], h[3], h[0]);

    // A texture over the array reads what the surface wrote (in a later launch).
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &r, &td, nullptr));
    through_texture<<<1, 4>>>(t, out);
    CHECK(cudaDeviceSynchronize());
    printf("texture %g %g %g %g\n", out[0], out[1], out[2], out[3]);

    cudaChannelFormatDesc id = cudaCreateChannelDesc<int>();
    cudaChannelFormatDesc sd = cudaCreateChannelDesc<short>();
    cudaArray_t a1, a3, al, ac, a4;
    CHECK(cudaMallocArray(&a1, &id, 8, 0, cudaArraySurfaceLoadStore));
    CHECK(cudaMalloc3DArray(&a3, &sd, make_cudaExtent(2, 2, 2), cudaArraySurfaceLoadStore));
    CHECK(cudaMalloc3DArray(&al, &id, make_cudaExtent(1, 1, 3), cudaArrayLayered | cudaArraySurfaceLoadStore));
    CHECK(cudaMalloc3DArray(&ac, &id, make_cudaExtent(1, 1, 6), cudaArrayCubemap | cudaArraySurfaceLoadStore));
    cudaChannelFormatDesc u4 = cudaCreateChannelDesc<uchar4>();
    CHECK(cudaMallocArray(&a4, &u4, 2, 2, cudaArraySurfaceLoadStore));
    int* iout;
    CHECK(cudaMallocManaged(&iout, 64));
    others<<<1, 8>>>(surface_of(a1), surface_of(a3), surface_of(al), surface_of(ac), surface_of(a4), iout);
    CHECK(cudaDeviceSynchronize());
    printf("others %d %d %d %d %d\n", iout[0], iout[1], iout[2], iout[3], iout[4]);

    // A surface needs cudaArraySurfaceLoadStore.
    cudaArray_t plain;
    CHECK(cudaMallocArray(&plain, &fd, 4, 4));
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = plain;
    cudaSurfaceObject_t bad;
    printf("no_flag %d\n", (int)cudaCreateSurfaceObject(&bad, &r));
    CHECK(cudaDestroySurfaceObject(s));
    CHECK(cudaFreeArray(a));
    printf("done\n");
    return 0;
}
"""


@pytest.fixture(scope="module")
def surfaced(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(SURFACES, filename="surfaces.cu", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "done" in res.stdout and "error" not in res.stdout and "failed" not in res.stdout, res.stdout
    return _values(res.stdout)


def test_surface_writes_reads_and_boundary_modes(surfaced):
    assert surfaced["written"] == [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]
    # read (2, 1); clamp (-8 bytes, 7) -> (0, 2); zero mode reads 0; (1, 2) by out-parameter;
    # the clamped store landed at (3, 0), the zero-mode store was dropped
    assert surfaced["boundaries"] == [12, 20, 0, 21, -1, 0]
    assert surfaced["texture"] == [10, 11, 12, 13]
    # 1D int, 3D short (byte x 2 = element 1, y 1, z 1 -> thread 7), layer 2 (threads 2 and 5:
    # the later store wins), cube face 5, a uchar4 element
    assert surfaced["others"][0] == 21
    assert surfaced["others"][1] == 700
    assert surfaced["others"][2] in (1002, 1005)
    assert surfaced["others"][3] == 5
    assert surfaced["others"][4] == 1234
    assert surfaced["no_flag"] == [1]   # cudaErrorInvalidValue


LEGACY = r"""
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <cuda_texture_types.h>          // CUDA <= 11 headers (removed in 12): accepted, empty
#include <texture_fetch_functions.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("error %s at line %d\n", cudaGetErrorString(e_), __LINE__); return 1; } } while (0)

texture<float, 1, cudaReadModeElementType> t_lin;               // Rodinia kmeans' spelling
texture<float4, 1> t_vec;                                          // hybridsort's
texture<uchar4, 1, cudaReadModeNormalizedFloat> t_norm;
texture<float, 2> t_2d;
texture<float, cudaTextureType2D, cudaReadModeElementType> t_arr;

__global__ void k(float* out, int off) {
    int i = threadIdx.x;
    out[i] = tex1Dfetch(t_lin, i + off);
    if (i == 0) {
        float4 v = tex1Dfetch(t_vec, 1);
        out[8] = v.x + v.y + v.z + v.w;
        float4 n = tex1Dfetch(t_norm, 0);
        out[9] = n.y;
        out[10] = tex2D(t_2d, 0.8f, 1.1f);
        out[11] = tex2D(t_arr, 1.25f, 0.25f);        // normalized + wrap: (0.25, 0.25) of 2x2
        out[12] = tex1Dfetch(t_lin, 100);             // outside: 0
    }
}

int main() {
    float* d;
    CHECK(cudaMalloc(&d, 64 * sizeof(float)));
    float h[64];
    for (int i = 0; i < 64; ++i) h[i] = (float)i;
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    t_lin.filterMode = cudaFilterModePoint;
    t_lin.normalized = false;
    CHECK(cudaBindTexture(NULL, &t_lin, d, &fd, 8 * sizeof(float)));
    cudaChannelFormatDesc vd = cudaCreateChannelDesc(32, 32, 32, 32, cudaChannelFormatKindFloat);
    CHECK(cudaBindTexture(0, t_vec, d, vd, 64 * sizeof(float)));
    uchar4* u;
    CHECK(cudaMalloc(&u, 4));
    uchar4 px = make_uchar4(0, 51, 0, 0);
    CHECK(cudaMemcpy(u, &px, 4, cudaMemcpyHostToDevice));
    CHECK(cudaBindTexture(0, t_norm, u));
    // 2D over pitched memory: [[1, 2], [3, 4]], bilinear.
    float* p;
    size_t pitch;
    CHECK(cudaMallocPitch(&p, &pitch, 2 * sizeof(float), 2));
    const float q[4] = {1, 2, 3, 4};
    CHECK(cudaMemcpy2D(p, pitch, q, 8, 8, 2, cudaMemcpyHostToDevice));
    t_2d.filterMode = cudaFilterModeLinear;
    t_2d.addressMode[0] = t_2d.addressMode[1] = cudaAddressModeClamp;
    CHECK(cudaBindTexture2D(0, t_2d, p, 2, 2, pitch));
    cudaArray_t a;
    CHECK(cudaMallocArray(&a, &fd, 2, 2));
    CHECK(cudaMemcpy2DToArray(a, 0, 0, q, 8, 8, 2, cudaMemcpyHostToDevice));
    t_arr.normalized = true;
    t_arr.addressMode[0] = t_arr.addressMode[1] = cudaAddressModeWrap;
    CHECK(cudaBindTextureToArray(t_arr, a));
    float* out;
    CHECK(cudaMallocManaged(&out, 16 * sizeof(float)));
    k<<<1, 8>>>(out, 0);
    CHECK(cudaDeviceSynchronize());
    printf("fetched");
    for (int i = 0; i < 13; ++i) printf(" %.9g", out[i]);
    printf("\n");

    // A pointer that is not texture-aligned: the offset (in bytes) comes back; without an offset
    // argument the bind fails, as in CUDA.
    size_t offset = 99;
    CHECK(cudaBindTexture(&offset, t_lin, d + 3, 8 * sizeof(float)));
    size_t again = 0;
    CHECK(cudaGetTextureAlignmentOffset(&again, t_lin));
    k<<<1, 8>>>(out, (int)(offset / sizeof(float)));
    CHECK(cudaDeviceSynchronize());
    printf("offset %d %d %g %g\n", (int)offset, (int)again, out[0], out[7]);
    printf("unaligned_null %d\n", (int)cudaBindTexture(NULL, t_lin, d + 3, 8 * sizeof(float)));
    const textureReference* ref = nullptr;
    CHECK(cudaGetTextureReference(&ref, &t_lin));
    printf("reference %d\n", ref == &t_lin);
    CHECK(cudaUnbindTexture(t_lin));
    printf("done\n");
    return 0;
}
"""


def test_legacy_texture_references(cpu_session_home, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    res = cpu.run_program(LEGACY, filename="legacy.cu", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "done" in res.stdout and "error" not in res.stdout, res.stdout
    v = _values(res.stdout)
    assert v["fetched"][:8] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert v["fetched"][8] == 4 + 5 + 6 + 7             # float4 element 1
    assert v["fetched"][9] == float(np.float32(51) / np.float32(255))   # readMode normalized float
    assert v["fetched"][10] == 1 + 385 / 256            # bilinear with 9-bit weights, as objects
    # normalized wrap on 2x2: (1.25, 0.25) -> (0.25, 0.25) -> texel space (0.5, 0.5): texel (0, 0)
    assert v["fetched"][11] == 1
    assert v["fetched"][12] == 0
    # d + 3 floats is 12 bytes past an aligned start: tex1Dfetch(t, i + 3) reads d[3 + i]
    assert v["offset"] == [12, 12, 3, 10]
    assert v["unaligned_null"] == [1]   # cudaErrorInvalidValue
    assert v["reference"] == [1]


FAULTS = r"""
#include <cstring>
#include <cuda_runtime.h>

static cudaArray_t make_array(int w, int h, unsigned flags, cudaChannelFormatDesc d) {
    cudaArray_t a = nullptr;
    cudaMallocArray(&a, &d, w, h, flags);
    return a;
}
static cudaTextureObject_t make_texture(cudaArray_t a, cudaTextureFilterMode f) {
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    td.filterMode = f;
    cudaTextureObject_t t = 0;
    cudaCreateTextureObject(&t, &r, &td, nullptr);
    return t;
}

__global__ void read_int(cudaTextureObject_t t, float x, int* out) {
    *out = tex1D<int>(t, x);
}
__global__ void write_at(cudaSurfaceObject_t s, int x) {
    surf2Dwrite(1.0f, s, x, 0);
}
texture<float, 1> unbound;
__global__ void read_unbound(float* out) { *out = tex1Dfetch(unbound, 0); }

extern "C" int integer_linear(float x, int* out) {    // linear filtering of integers read as integers
    cudaArray_t a = make_array(4, 0, 0, cudaCreateChannelDesc<int>());
    const int v[4] = {5, 6, 7, 8};
    cudaMemcpy2DToArray(a, 0, 0, v, 16, 16, 1, cudaMemcpyHostToDevice);
    cudaTextureObject_t t = make_texture(a, cudaFilterModeLinear);
    read_int<<<1, 1>>>(t, x, out);
    return (int)cudaDeviceSynchronize();
}
extern "C" int destroyed_object(int* out) {
    cudaTextureObject_t t = make_texture(make_array(4, 0, 0, cudaCreateChannelDesc<int>()), cudaFilterModePoint);
    cudaDestroyTextureObject(t);
    read_int<<<1, 1>>>(t, 0.5f, out);
    return (int)cudaDeviceSynchronize();
}
extern "C" int surface_trap(int x) {
    cudaArray_t a = make_array(4, 4, cudaArraySurfaceLoadStore, cudaCreateChannelDesc<float>());
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaSurfaceObject_t s;
    cudaCreateSurfaceObject(&s, &r);
    write_at<<<1, 1>>>(s, x);
    return (int)cudaDeviceSynchronize();
}
extern "C" int unbound_reference(float* out) {
    read_unbound<<<1, 1>>>(out);
    return (int)cudaDeviceSynchronize();
}
// Invalid calls: each returns CUDA's error code.
extern "C" int api_errors(int* codes) {
    cudaChannelFormatDesc three = cudaCreateChannelDesc(32, 32, 32, 0, cudaChannelFormatKindFloat);
    cudaArray_t a;
    codes[0] = cudaMallocArray(&a, &three, 4, 4);                      // no 3-channel formats
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    codes[1] = cudaMalloc3DArray(&a, &fd, make_cudaExtent(4, 3, 6), cudaArrayCubemap);   // not square
    float* d;
    size_t pitch;
    cudaMallocPitch(&d, &pitch, 64, 4);
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypePitch2D;
    r.res.pitch2D.devPtr = d;
    r.res.pitch2D.desc = fd;
    r.res.pitch2D.width = 16;
    r.res.pitch2D.height = 4;
    r.res.pitch2D.pitchInBytes = 68;                                   // not a multiple of 32
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    cudaTextureObject_t t;
    codes[2] = cudaCreateTextureObject(&t, &r, &td, nullptr);
    r.res.pitch2D.pitchInBytes = pitch;
    r.res.pitch2D.devPtr = d + 1;                                      // not textureAlignment-aligned
    codes[3] = cudaCreateTextureObject(&t, &r, &td, nullptr);
    r.res.pitch2D.devPtr = d;
    codes[4] = cudaCreateTextureObject(&t, &r, &td, nullptr);          // fine
    // past the end of a row
    codes[5] = cudaMemcpy2DToArray(make_array(4, 4, 0, fd), 8, 0, d, 64, 16, 1, cudaMemcpyDeviceToDevice);
    codes[6] = cudaGetLastError();
    return 0;
}
"""


@pytest.fixture(scope="module")
def faults(compile_cu):
    return compile_cu(FAULTS, filename="faults.cu")


def test_faults_a_gpu_would_report(faults):
    out = np.zeros(1, np.int32)
    assert faults.call("integer_linear", [1.5, out]) == 0   # exactly at a texel centre: that texel
    assert out[0] == 6
    line = FAULTS.splitlines().index("    *out = tex1D<int>(t, x);") + 1
    with pytest.raises(cpu.KernelFault, match=rf"kernel 'read_int'.*linear filtering of a texture read as integers"
                                              rf".* at line {line} "):
        faults.call("integer_linear", [1.7, out])
    with pytest.raises(cpu.KernelFault, match=r"invalid or destroyed texture object"):
        faults.call("destroyed_object", [out])
    assert faults.call("surface_trap", [12]) == 0            # byte 12 = element 3: inside
    with pytest.raises(cpu.KernelFault, match=r"surface write out of bounds with cudaBoundaryModeTrap: byte x=16"):
        faults.call("surface_trap", [16])
    with pytest.raises(cpu.KernelFault, match=r"texture reference that is not bound"):
        faults.call("unbound_reference", [np.zeros(1, np.float32)])


def test_invalid_calls_return_cuda_errors(faults):
    codes = np.full(8, -1, np.int32)
    faults.call("api_errors", [codes])
    # cudaErrorInvalidChannelDescriptor, then cudaErrorInvalidValue for a bad cubemap, a bad pitch,
    # a misaligned pointer, success, a copy past the row; the last error stays readable
    assert codes[:7].tolist() == [20, 1, 1, 1, 0, 1, 1]


def test_refusals_that_stay(cpu_session_home, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    src = ("#include <cuda_runtime.h>\n"
           "surface<void, 2> surf_ref;\n"
           "__global__ void k(float* out) { surf2Dread(out, surf_ref, 0, 0); }\n")
    with pytest.raises(cpu.UnsupportedFeatureError, match=r"surface references .* \(refs\.cu:2: surface<void, 2>"):
        cpu.compile(src, filename="refs.cu")
    grad = ("#include <cuda_runtime.h>\n__global__ void k(cudaTextureObject_t t, float* out) {\n"
            "    out[0] = tex2DGrad<float>(t, 0.5f, 0.5f, make_float2(1, 0), make_float2(0, 1));\n}\n")
    with pytest.raises(cpu.UnsupportedFeatureError, match=r"explicit gradients \(tex\*Grad\).*grad\.cu:3"):
        cpu.compile(grad, filename="grad.cu")


@pytest.mark.slow
def test_sampler_and_surfaces_clean_under_addresssanitizer(cpu_session_home, monkeypatch, sampled):
    # Every fetch, copy and surface access stays inside its array (sanitize=True: exact-size blocks).
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    res = cpu.run_program(SAMPLING, filename="sampling.cu", sanitize=True, timeout=300)
    assert res.returncode == 0 and "AddressSanitizer" not in res.stderr, res.stderr[-2000:]
    assert _values(res.stdout) == sampled
    res = cpu.run_program(SURFACES, filename="surfaces.cu", sanitize=True, timeout=300)
    assert res.returncode == 0 and "done" in res.stdout, res.stderr[-2000:]


@pytest.mark.slow
def test_race_check_sees_surface_stores(cpu_session_home, monkeypatch):
    # Arrays are device allocations: the race check hashes them after each launch. Threads that
    # all store to one surface element in a launch race (the last store wins).
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    src = r"""
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
__global__ void same_element(cudaSurfaceObject_t s) { surf2Dwrite((float)threadIdx.x, s, 0, 0); }
__global__ void own_element(cudaSurfaceObject_t s) { surf2Dwrite((float)threadIdx.x, s, threadIdx.x * 4, 1); }
int main() {
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    cudaMallocArray(&a, &fd, 32, 2, cudaArraySurfaceLoadStore);
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaSurfaceObject_t s;
    cudaCreateSurfaceObject(&s, &r);
    own_element<<<1, 32>>>(s);
    same_element<<<1, 32>>>(s);
    float v;
    cudaMemcpy2DFromArray(&v, 4, a, 0, 0, 4, 1, cudaMemcpyDeviceToHost);
    printf("%g\n", v);
    return 0;
}
"""
    res = cpu.run_program(src, filename="race.cu", race_check=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.race is not None and res.race.found, res.race
    assert res.race.kernel == "same_element"
