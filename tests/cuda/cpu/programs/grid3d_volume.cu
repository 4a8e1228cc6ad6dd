// 3D volume processing: dim3 grids and blocks in three dimensions, a 7-point 3D Laplacian, a
// kernel indexing with all of blockIdx/threadIdx/blockDim/gridDim .x/.y/.z, and launches written
// as <<<dim3(..), dim3(..), sharedBytes, stream>>> with a non-default stream and dynamic shared memory.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                                 \
    do {                                                                              \
        cudaError_t e = (x);                                                          \
        if (e != cudaSuccess) {                                                       \
            fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define IDX(x, y, z, nx, ny) (((size_t)(z) * (ny) + (y)) * (nx) + (x))

__global__ void laplacian3d(const float *in, float *out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x <= 0 || y <= 0 || z <= 0 || x >= nx - 1 || y >= ny - 1 || z >= nz - 1) {
        if (x < nx && y < ny && z < nz) out[IDX(x, y, z, nx, ny)] = 0.f;
        return;
    }
    float c = in[IDX(x, y, z, nx, ny)];
    out[IDX(x, y, z, nx, ny)] = in[IDX(x - 1, y, z, nx, ny)] + in[IDX(x + 1, y, z, nx, ny)] + in[IDX(x, y - 1, z, nx, ny)] +
                                in[IDX(x, y + 1, z, nx, ny)] + in[IDX(x, y, z - 1, nx, ny)] + in[IDX(x, y, z + 1, nx, ny)] -
                                6.f * c;
}

// Writes a unique id from the full 3D launch geometry and sums, per block, the threads' linear ids
// through dynamic shared memory sized at launch.
__global__ void geometry(unsigned *ids, unsigned *blockSums) {
    extern __shared__ unsigned sh[];
    unsigned tInBlock = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned bLinear = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned threadsPerBlock = blockDim.x * blockDim.y * blockDim.z;
    unsigned gid = bLinear * threadsPerBlock + tInBlock;
    ids[gid] = (blockIdx.z << 24) | (blockIdx.y << 16) | (blockIdx.x << 8) | (threadIdx.z << 6) | (threadIdx.y << 3) |
               threadIdx.x;
    sh[tInBlock] = gid;
    __syncthreads();
    if (tInBlock == 0) {
        unsigned s = 0;
        for (unsigned k = 0; k < threadsPerBlock; ++k) s += sh[k];
        blockSums[bLinear] = s;
    }
}

int main() {
    const int nx = 40, ny = 30, nz = 20;
    const size_t vol = (size_t)nx * ny * nz;
    float *h = new float[vol], *r = new float[vol];
    srand(9001);
    for (size_t i = 0; i < vol; ++i) h[i] = (float)rand() / RAND_MAX;
    float *din, *dout;
    CUDA_CHECK(cudaMalloc(&din, vol * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dout, vol * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(din, h, vol * sizeof(float), cudaMemcpyHostToDevice));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    dim3 block(8, 8, 4);
    dim3 grid((nx + block.x - 1) / block.x, (ny + block.y - 1) / block.y, (nz + block.z - 1) / block.z);
    laplacian3d<<<grid, block, 0, s>>>(din, dout, nx, ny, nz);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(r, dout, vol * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int z = 0; z < nz; ++z)
        for (int y = 0; y < ny; ++y)
            for (int x = 0; x < nx; ++x) {
                float e = 0.f;
                if (x > 0 && y > 0 && z > 0 && x < nx - 1 && y < ny - 1 && z < nz - 1)
                    e = h[IDX(x - 1, y, z, nx, ny)] + h[IDX(x + 1, y, z, nx, ny)] + h[IDX(x, y - 1, z, nx, ny)] +
                        h[IDX(x, y + 1, z, nx, ny)] + h[IDX(x, y, z - 1, nx, ny)] + h[IDX(x, y, z + 1, nx, ny)] - 6.f * h[IDX(x, y, z, nx, ny)];
                if (fabsf(r[IDX(x, y, z, nx, ny)] - e) > 1e-5f) ++bad;
            }
    printf("laplacian mismatches: %d\n", bad);

    const int gx = 3, gy = 2, gz = 2, bx = 4, by = 3, bz = 2;
    const int total = gx * gy * gz * bx * by * bz;
    unsigned *dids, *dsums;
    CUDA_CHECK(cudaMalloc(&dids, total * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&dsums, gx * gy * gz * sizeof(unsigned)));
    geometry<<<dim3(gx, gy, gz), dim3(bx, by, bz), bx * by * bz * sizeof(unsigned), s>>>(dids, dsums);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(s));
    unsigned *ids = new unsigned[total], *sums = new unsigned[gx * gy * gz];
    CUDA_CHECK(cudaMemcpy(ids, dids, total * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(sums, dsums, gx * gy * gz * sizeof(unsigned), cudaMemcpyDeviceToHost));
    int badG = 0;
    for (int bzz = 0; bzz < gz; ++bzz)
        for (int byy = 0; byy < gy; ++byy)
            for (int bxx = 0; bxx < gx; ++bxx) {
                unsigned bl = bxx + gx * (byy + gy * bzz), s2 = 0;
                for (int tz = 0; tz < bz; ++tz)
                    for (int ty = 0; ty < by; ++ty)
                        for (int tx = 0; tx < bx; ++tx) {
                            unsigned t = tx + bx * (ty + by * tz), gid = bl * bx * by * bz + t;
                            unsigned e = (bzz << 24) | (byy << 16) | (bxx << 8) | (tz << 6) | (ty << 3) | tx;
                            badG += ids[gid] != e;
                            s2 += gid;
                        }
                badG += sums[bl] != s2;
            }
    printf("3D geometry mismatches: %d\n", badG);
    CUDA_CHECK(cudaStreamDestroy(s));
    cudaFree(din); cudaFree(dout); cudaFree(dids); cudaFree(dsums);
    delete[] h; delete[] r; delete[] ids; delete[] sums;
    bool ok = bad == 0 && badG == 0;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
