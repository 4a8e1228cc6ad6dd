// Particle update written twice: array-of-structs (struct Particle with float3 members) and
// struct-of-arrays (separate x/y/z arrays in a struct passed by value), checked against each other
// and against the host; also a by-value struct kernel argument with nested members.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                            \
    do {                                                                         \
        cudaError_t e = (x);                                                     \
        if (e != cudaSuccess) {                                                  \
            fprintf(stderr, "error %s at %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

struct Particle {
    float3 pos;
    float3 vel;
    float mass;
    int id;
};

struct ParticlesSoA {
    float *px, *py, *pz;
    float *vx, *vy, *vz;
    float *mass;
    int n;
};

struct SimParams {
    float dt;
    float3 gravity;
    float damping;
};

__device__ __forceinline__ float3 operator+(float3 a, float3 b) { return make_float3(a.x + b.x, a.y + b.y, a.z + b.z); }
__device__ __forceinline__ float3 operator*(float3 a, float s) { return make_float3(a.x * s, a.y * s, a.z * s); }

__global__ void stepAoS(Particle *p, int n, SimParams prm) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Particle q = p[i];
    float3 accel = prm.gravity * (1.0f / q.mass);
    q.vel = (q.vel + accel * prm.dt) * prm.damping;
    q.pos = q.pos + q.vel * prm.dt;
    if (q.pos.y < 0.f) {  // bounce
        q.pos.y = -q.pos.y;
        q.vel.y = -q.vel.y;
    }
    p[i] = q;
}

__global__ void stepSoA(ParticlesSoA s, SimParams prm) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s.n) return;
    float inv = 1.0f / s.mass[i];
    float vx = (s.vx[i] + prm.gravity.x * inv * prm.dt) * prm.damping;
    float vy = (s.vy[i] + prm.gravity.y * inv * prm.dt) * prm.damping;
    float vz = (s.vz[i] + prm.gravity.z * inv * prm.dt) * prm.damping;
    float px = s.px[i] + vx * prm.dt, py = s.py[i] + vy * prm.dt, pz = s.pz[i] + vz * prm.dt;
    if (py < 0.f) {
        py = -py;
        vy = -vy;
    }
    s.px[i] = px; s.py[i] = py; s.pz[i] = pz;
    s.vx[i] = vx; s.vy[i] = vy; s.vz[i] = vz;
}

int main() {
    const int n = 3000, steps = 10;
    SimParams prm;
    prm.dt = 0.01f;
    prm.gravity = make_float3(0.1f, -9.8f, 0.0f);
    prm.damping = 0.999f;
    Particle *hp = new Particle[n];
    float *h[7];
    for (int k = 0; k < 7; ++k) h[k] = new float[n];
    srand(2);
    for (int i = 0; i < n; ++i) {
        hp[i].pos = make_float3((float)rand() / RAND_MAX, 0.05f * rand() / RAND_MAX, (float)rand() / RAND_MAX);
        hp[i].vel = make_float3(0.f, 2.f * rand() / RAND_MAX - 1.f, 0.f);
        hp[i].mass = 1.f + (float)rand() / RAND_MAX;
        hp[i].id = i;
        h[0][i] = hp[i].pos.x; h[1][i] = hp[i].pos.y; h[2][i] = hp[i].pos.z;
        h[3][i] = hp[i].vel.x; h[4][i] = hp[i].vel.y; h[5][i] = hp[i].vel.z;
        h[6][i] = hp[i].mass;
    }
    Particle *dp;
    CUDA_CHECK(cudaMalloc(&dp, n * sizeof(Particle)));
    CUDA_CHECK(cudaMemcpy(dp, hp, n * sizeof(Particle), cudaMemcpyHostToDevice));
    ParticlesSoA s;
    float **fields[7] = {&s.px, &s.py, &s.pz, &s.vx, &s.vy, &s.vz, &s.mass};
    for (int k = 0; k < 7; ++k) {
        CUDA_CHECK(cudaMalloc(fields[k], n * sizeof(float)));
        CUDA_CHECK(cudaMemcpy(*fields[k], h[k], n * sizeof(float), cudaMemcpyHostToDevice));
    }
    s.n = n;
    for (int t = 0; t < steps; ++t) {
        stepAoS<<<(n + 127) / 128, 128>>>(dp, n, prm);
        stepSoA<<<(n + 255) / 256, 256>>>(s, prm);
    }
    CUDA_CHECK(cudaGetLastError());
    Particle *rp = new Particle[n];
    CUDA_CHECK(cudaMemcpy(rp, dp, n * sizeof(Particle), cudaMemcpyDeviceToHost));
    float *ry = new float[n], *rvy = new float[n];
    CUDA_CHECK(cudaMemcpy(ry, s.py, n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(rvy, s.vy, n * sizeof(float), cudaMemcpyDeviceToHost));
    // host reference in double
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        double px = hp[i].pos.x, py = hp[i].pos.y, vx = hp[i].vel.x, vy = hp[i].vel.y, m = hp[i].mass;
        for (int t = 0; t < steps; ++t) {
            vx = (vx + prm.gravity.x / m * prm.dt) * prm.damping;
            vy = (vy + prm.gravity.y / m * prm.dt) * prm.damping;
            px += vx * prm.dt;
            py += vy * prm.dt;
            if (py < 0) {
                py = -py;
                vy = -vy;
            }
        }
        if (rp[i].id != i || rp[i].mass != hp[i].mass) ++bad;
        if (fabs(rp[i].pos.x - px) > 1e-4 || fabs(rp[i].pos.y - py) > 1e-3 || fabs(rp[i].vel.y - vy) > 1e-2) ++bad;
        if (fabs(ry[i] - rp[i].pos.y) > 1e-3 || fabs(rvy[i] - rp[i].vel.y) > 1e-2) ++bad;
    }
    printf("AoS/SoA particle mismatches: %d of %d\n", bad, n);
    cudaFree(dp);
    for (int k = 0; k < 7; ++k) cudaFree(*fields[k]);
    printf("%s\n", bad <= n / 500 ? "PASSED" : "FAILED");
    return bad <= n / 500 ? 0 : 1;
}
