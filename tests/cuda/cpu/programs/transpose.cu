// Matrix transpose three ways (naive, coalesced through a 32x32 shared tile, padded tile to avoid
// bank conflicts) with TILE_DIM x BLOCK_ROWS thread blocks, each checked against the host.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

const int TILE_DIM = 32;
const int BLOCK_ROWS = 8;

inline cudaError_t checkCuda(cudaError_t result) {
    if (result != cudaSuccess) {
        fprintf(stderr, "CUDA Runtime Error: %s\n", cudaGetErrorString(result));
        exit(1);
    }
    return result;
}

__global__ void transposeNaive(float *odata, const float *idata, int width, int height) {
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height) odata[x * height + (y + j)] = idata[(y + j) * width + x];
}

__global__ void transposeCoalesced(float *odata, const float *idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void transposeNoBankConflicts(float *odata, const float *idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main() {
    const int width = 200, height = 136;  // not multiples of the tile: exercises the guards
    const int mem = width * height * sizeof(float);
    dim3 dimGrid((width + TILE_DIM - 1) / TILE_DIM, (height + TILE_DIM - 1) / TILE_DIM, 1);
    dim3 dimBlock(TILE_DIM, BLOCK_ROWS, 1);
    float *h_idata = (float *)malloc(mem), *h_tdata = (float *)malloc(mem), *gold = (float *)malloc(mem);
    srand(31);
    for (int j = 0; j < height; j++)
        for (int i = 0; i < width; i++) h_idata[j * width + i] = (float)(rand() % 100000);
    for (int j = 0; j < height; j++)
        for (int i = 0; i < width; i++) gold[i * height + j] = h_idata[j * width + i];
    float *d_idata, *d_tdata;
    checkCuda(cudaMalloc(&d_idata, mem));
    checkCuda(cudaMalloc(&d_tdata, mem));
    checkCuda(cudaMemcpy(d_idata, h_idata, mem, cudaMemcpyHostToDevice));
    const char *names[3] = {"naive", "coalesced", "no bank conflicts"};
    bool ok = true;
    for (int k = 0; k < 3; ++k) {
        checkCuda(cudaMemset(d_tdata, 0xFF, mem));
        if (k == 0) transposeNaive<<<dimGrid, dimBlock>>>(d_tdata, d_idata, width, height);
        if (k == 1) transposeCoalesced<<<dimGrid, dimBlock>>>(d_tdata, d_idata, width, height);
        if (k == 2) transposeNoBankConflicts<<<dimGrid, dimBlock>>>(d_tdata, d_idata, width, height);
        checkCuda(cudaGetLastError());
        checkCuda(cudaMemcpy(h_tdata, d_tdata, mem, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int i = 0; i < width * height; i++)
            if (h_tdata[i] != gold[i]) bad++;
        printf("%-20s %s\n", names[k], bad ? "*** FAILED ***" : "ok");
        ok = ok && !bad;
    }
    checkCuda(cudaFree(d_tdata));
    checkCuda(cudaFree(d_idata));
    free(h_idata); free(h_tdata); free(gold);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
