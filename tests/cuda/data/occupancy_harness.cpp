// Reference answers from NVIDIA's cuda_occupancy.h, for tests/cuda/test_occupancy.py and test_arch.py.
//
// Reads one query per line on stdin and prints one answer line per query:
//
//   O <device: major minor maxThreadsPerBlock maxThreadsPerSM regsPerBlock regsPerSM warpSize
//              smemPerBlock smemPerSM numSms smemOptin smemReserved>
//     <function: maxThreadsPerBlock numRegs sharedSizeBytes shmemLimitConfig maxDynamicSharedSizeBytes
//                numBlockBarriers virtualResourceCount>
//     <state: cacheConfig carveoutConfig> blockSize dynamicSmemSize
//   -> status activeBlocks limitingFactors limRegs limSmem limWarps limBlocks limBarriers limVirtual
//      allocatedRegs allocatedSmem
//
//   P <device> <function> <state> a b      (dynamic shared memory = a * blockSize + b)
//   -> status minGridSize blockSize
//
//   A major minor
//   -> status smemGranularity regMaxPerThread regGranularity subPartitions maxBlocksPerSM
//      virtualResourcesPerSM barrierSlotsPerBlock carveout...
//
// Everything is computed by the header's own functions; this file only marshals numbers.
#include <cuda_occupancy.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct LinearSmem {
    long long a;
    long long b;
    size_t operator()(int blockSize) const { return (size_t)(a * blockSize + b); }
};

bool readInputs(std::istringstream &in, cudaOccDeviceProp &p, cudaOccFuncAttributes &f, cudaOccDeviceState &s) {
    int shmemCfg = 0, cacheCfg = 0;
    in >> p.computeMajor >> p.computeMinor >> p.maxThreadsPerBlock >> p.maxThreadsPerMultiprocessor >>
        p.regsPerBlock >> p.regsPerMultiprocessor >> p.warpSize >> p.sharedMemPerBlock >>
        p.sharedMemPerMultiprocessor >> p.numSms >> p.sharedMemPerBlockOptin >> p.reservedSharedMemPerBlock;
    in >> f.maxThreadsPerBlock >> f.numRegs >> f.sharedSizeBytes >> shmemCfg >> f.maxDynamicSharedSizeBytes >>
        f.numBlockBarriers >> f.virtualResourceCount;
    in >> cacheCfg >> s.carveoutConfig;
    f.partitionedGCConfig = PARTITIONED_GC_OFF;
    f.shmemLimitConfig = (cudaOccFuncShmemConfig)shmemCfg;
    s.cacheConfig = (cudaOccCacheConfig)cacheCfg;
    return (bool)in;
}

void archConstants(int major, int minor) {
    cudaOccDeviceProp p;
    p.computeMajor = major;
    p.computeMinor = minor;
    int smemGran = 0, regMax = 0, regGran = 0, parts = 0, blocks = 0, virt = 0, bars = 0;
    int st = cudaOccSMemAllocationGranularity(&smemGran, &p);
    st |= cudaOccRegAllocationMaxPerThread(&regMax, &p);
    st |= cudaOccRegAllocationGranularity(&regGran, &p);
    st |= cudaOccSubPartitionsPerMultiprocessor(&parts, &p);
    st |= cudaOccMaxBlocksPerMultiprocessor(&blocks, &p);
    st |= cudaOccMaxVirtualResourceCountPerSM(&virt, &p);
    cudaOccFuncAttributes f;
    f.numBlockBarriers = 1;
    st |= cudaOccMaxBlocksPerSMBlockBarrierLimit(&bars, 1, &p, &f);
    std::printf("%d %d %d %d %d %d %d %d", st, smemGran, regMax, regGran, parts, blocks, virt, bars);
    size_t last = (size_t)-1;
    for (size_t kb = 0; kb <= 512; ++kb) {
        size_t size = kb * 1024;
        if (cudaOccAlignUpShmemSizeVoltaPlus(&size, &p) == CUDA_OCC_SUCCESS && size != last) {
            std::printf(" %zu", size);
            last = size;
        }
    }
    std::printf("\n");
}

}  // namespace

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string kind;
        if (!(in >> kind)) continue;
        if (kind == "A") {
            int major = 0, minor = 0;
            in >> major >> minor;
            archConstants(major, minor);
            continue;
        }
        cudaOccDeviceProp p;
        cudaOccFuncAttributes f;
        cudaOccDeviceState s;
        if (!readInputs(in, p, f, s)) {
            std::printf("bad-input\n");
            continue;
        }
        if (kind == "O") {
            int blockSize = 0;
            size_t dyn = 0;
            in >> blockSize >> dyn;
            cudaOccResult r;
            std::memset(&r, 0, sizeof r);
            cudaOccError st = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &f, &s, blockSize, dyn);
            std::printf("%d %d %u %d %d %d %d %d %d %d %zu\n", (int)st, r.activeBlocksPerMultiprocessor,
                        r.limitingFactors, r.blockLimitRegs, r.blockLimitSharedMem, r.blockLimitWarps,
                        r.blockLimitBlocks, r.blockLimitBarriers, r.blockLimitVirtual,
                        r.allocatedRegistersPerBlock, r.allocatedSharedMemPerBlock);
        } else if (kind == "P") {
            long long a = 0, b = 0;
            in >> a >> b;
            int minGrid = 0, blockSize = 0;
            cudaOccError st;
            if (a == 0) {
                st = cudaOccMaxPotentialOccupancyBlockSize(&minGrid, &blockSize, &p, &f, &s, (size_t)b);
            } else {
                st = cudaOccMaxPotentialOccupancyBlockSizeVariableSMem(&minGrid, &blockSize, &p, &f, &s,
                                                                        LinearSmem{a, b});
            }
            std::printf("%d %d %d\n", (int)st, minGrid, blockSize);
        } else {
            std::printf("bad-kind\n");
        }
    }
    return 0;
}
