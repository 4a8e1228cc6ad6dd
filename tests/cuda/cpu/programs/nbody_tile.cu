// All-pairs N-body force computation with float4 bodies (xyz + mass) staged through shared-memory
// tiles, rsqrtf-based softened interaction, and one leapfrog integration step.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define BLOCK_SIZE 128
#define SOFTENING 1e-2f
#define checkCudaErrors(x)                                                     \
    do {                                                                       \
        cudaError_t e = (x);                                                   \
        if (e != cudaSuccess) {                                                \
            fprintf(stderr, "CUDA error %d %s line %d\n", e, cudaGetErrorString(e), __LINE__); \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

__device__ float3 bodyBodyInteraction(float4 bi, float4 bj, float3 ai) {
    float3 r;
    r.x = bj.x - bi.x;
    r.y = bj.y - bi.y;
    r.z = bj.z - bi.z;
    float distSqr = r.x * r.x + r.y * r.y + r.z * r.z + SOFTENING * SOFTENING;
    float invDist = rsqrtf(distSqr);
    float invDistCube = invDist * invDist * invDist;
    float s = bj.w * invDistCube;
    ai.x += r.x * s;
    ai.y += r.y * s;
    ai.z += r.z * s;
    return ai;
}

__global__ void integrateBodies(float4 *newPos, float4 *vel, const float4 *oldPos, float dt, int n) {
    __shared__ float4 shPosition[BLOCK_SIZE];
    int gtid = blockIdx.x * blockDim.x + threadIdx.x;
    float4 myPos = gtid < n ? oldPos[gtid] : make_float4(0.f, 0.f, 0.f, 0.f);
    float3 acc = make_float3(0.0f, 0.0f, 0.0f);
    for (int tile = 0; tile * BLOCK_SIZE < n; tile++) {
        int idx = tile * BLOCK_SIZE + threadIdx.x;
        shPosition[threadIdx.x] = idx < n ? oldPos[idx] : make_float4(0.f, 0.f, 0.f, 0.f);  // w=0: no force
        __syncthreads();
#pragma unroll 8
        for (int j = 0; j < BLOCK_SIZE; j++) acc = bodyBodyInteraction(myPos, shPosition[j], acc);
        __syncthreads();
    }
    if (gtid < n) {
        float4 v = vel[gtid];
        v.x += acc.x * dt;
        v.y += acc.y * dt;
        v.z += acc.z * dt;
        myPos.x += v.x * dt;
        myPos.y += v.y * dt;
        myPos.z += v.z * dt;
        newPos[gtid] = myPos;
        vel[gtid] = v;
    }
}

int main() {
    const int n = 1000;
    const float dt = 0.01f;
    float4 *pos = new float4[n], *vel = new float4[n], *outPos = new float4[n], *outVel = new float4[n];
    srand(31415);
    for (int i = 0; i < n; ++i) {
        pos[i] = make_float4(2.f * rand() / RAND_MAX - 1.f, 2.f * rand() / RAND_MAX - 1.f,
                             2.f * rand() / RAND_MAX - 1.f, 0.5f + (float)rand() / RAND_MAX);
        vel[i] = make_float4(0.1f * rand() / RAND_MAX, 0.f, -0.1f * rand() / RAND_MAX, 0.f);
    }
    float4 *dPos, *dNew, *dVel;
    checkCudaErrors(cudaMalloc(&dPos, n * sizeof(float4)));
    checkCudaErrors(cudaMalloc(&dNew, n * sizeof(float4)));
    checkCudaErrors(cudaMalloc(&dVel, n * sizeof(float4)));
    checkCudaErrors(cudaMemcpy(dPos, pos, n * sizeof(float4), cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(dVel, vel, n * sizeof(float4), cudaMemcpyHostToDevice));
    integrateBodies<<<(n + BLOCK_SIZE - 1) / BLOCK_SIZE, BLOCK_SIZE>>>(dNew, dVel, dPos, dt, n);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaMemcpy(outPos, dNew, n * sizeof(float4), cudaMemcpyDeviceToHost));
    checkCudaErrors(cudaMemcpy(outVel, dVel, n * sizeof(float4), cudaMemcpyDeviceToHost));
    double maxRel = 0;
    for (int i = 0; i < n; ++i) {
        double ax = 0, ay = 0, az = 0;
        for (int j = 0; j < n; ++j) {
            double rx = pos[j].x - pos[i].x, ry = pos[j].y - pos[i].y, rz = pos[j].z - pos[i].z;
            double d2 = rx * rx + ry * ry + rz * rz + (double)SOFTENING * SOFTENING;
            double inv = 1.0 / sqrt(d2);
            double s = pos[j].w * inv * inv * inv;
            ax += rx * s;
            ay += ry * s;
            az += rz * s;
        }
        double vx = vel[i].x + ax * dt, vy = vel[i].y + ay * dt, vz = vel[i].z + az * dt;
        double scale = 1.0 + sqrt(ax * ax + ay * ay + az * az) * dt;
        maxRel = fmax(maxRel, fabs(outVel[i].x - vx) / scale);
        maxRel = fmax(maxRel, fabs(outVel[i].y - vy) / scale);
        maxRel = fmax(maxRel, fabs(outVel[i].z - vz) / scale);
        maxRel = fmax(maxRel, fabs(outPos[i].x - (pos[i].x + vx * dt)) / scale);
        maxRel = fmax(maxRel, fabs(outPos[i].w - pos[i].w));
    }
    printf("n-body: %d bodies, max scaled error %.3e\n", n, maxRel);
    cudaFree(dPos); cudaFree(dNew); cudaFree(dVel);
    delete[] pos; delete[] vel; delete[] outPos; delete[] outVel;
    bool ok = maxRel < 1e-3;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
