"""Inline PTX in device code (veriforge/cuda/cpu/ptx.py, runtime/vf_ptx.h): each instruction family
of the supported subset against known values, computed by a real g++ build of a CUDA program, and
refusals (file:line, naming the instruction) for PTX outside the subset."""

from __future__ import annotations

import re
import struct

import pytest

from veriforge.cuda import cpu
from veriforge.cuda.cpu.ptx import PtxError, parse_asm, translate

PROGRAM = r"""
#include <cstdio>
#include <cstdint>
#define OUT(k, v) out[(k)] = (unsigned long long)(v)

__device__ unsigned lane_of() { unsigned r; asm("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }

__global__ void scalar(unsigned long long* out, const float* fin, float* fout, unsigned* mem, int neg, float fneg) {
    if (threadIdx.x != 5 || blockIdx.x != 1) return;
    unsigned u; int s; unsigned long long l; float f; double d;
    // special registers
    asm("mov.u32 %0, %%tid.x;" : "=r"(u)); OUT(0, u);
    asm("mov.u32 %0, %%ntid.x;" : "=r"(u)); OUT(1, u);
    asm("mov.u32 %0, %%ctaid.x;" : "=r"(u)); OUT(2, u);
    asm("mov.u32 %0, %%nctaid.x;" : "=r"(u)); OUT(3, u);
    asm("mov.u32 %0, %%warpid;" : "=r"(u)); OUT(4, u);
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(u)); OUT(5, u);
    asm("mov.u32 %0, %%lanemask_ge;" : "=r"(u)); OUT(6, u);
    asm("mov.u32 %0, %%nsmid;" : "=r"(u)); OUT(7, u);
    unsigned long long c1, c2;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1));
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(c2));     // one '%', as cudaGraphsPerfScaling writes it
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(l)); OUT(8, l >= c1 && c2 > 0);
    // integer arithmetic
    asm("add.s32 %0, %1, %2;" : "=r"(s) : "r"(0x7fffffff), "r"(1)); OUT(10, (unsigned)s);
    asm("sub.u32 %0, %1, %2;" : "=r"(u) : "r"(3), "r"(5)); OUT(11, u);
    asm("mul.lo.s32 %0, %1, %2;" : "=r"(s) : "r"(neg), "r"(7)); OUT(12, (long long)s);
    asm("mul.hi.u32 %0, %1, %2;" : "=r"(u) : "r"(0xffffffffu), "r"(0x10u)); OUT(13, u);
    asm("mul.wide.s32 %0, %1, %2;" : "=l"(l) : "r"(neg), "r"(1 << 30)); OUT(14, (long long)l);
    asm("mad.lo.u32 %0, %1, %2, %3;" : "=r"(u) : "r"(6), "r"(7), "r"(8)); OUT(15, u);
    asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(l) : "r"(0x80000000u), "r"(4u), "l"(5ull)); OUT(16, l);
    asm("div.s32 %0, %1, %2;" : "=r"(s) : "r"(-7), "r"(2)); OUT(17, (long long)s);
    asm("rem.s32 %0, %1, %2;" : "=r"(s) : "r"(-7), "r"(2)); OUT(18, (long long)s);
    asm("min.s32 %0, %1, %2;" : "=r"(s) : "r"(neg), "r"(3)); OUT(19, (long long)s);
    asm("max.u32 %0, %1, %2;" : "=r"(u) : "r"(neg), "r"(3)); OUT(20, u);
    asm("abs.s32 %0, %1;" : "=r"(s) : "r"(neg)); OUT(21, s);
    asm("neg.s32 %0, %1;" : "=r"(s) : "r"(9)); OUT(22, (long long)s);
    asm("add.sat.s32 %0, %1, %2;" : "=r"(s) : "r"(0x7ffffff0), "r"(0x100)); OUT(23, s);
    unsigned lo, hi;   // 64-bit add from 32-bit halves with a carry chain
    asm("add.cc.u32 %0, %2, %4;\n\taddc.u32 %1, %3, %5;" : "=r"(lo), "=r"(hi)
        : "r"(0xffffffffu), "r"(1u), "r"(2u), "r"(3u));
    OUT(24, ((unsigned long long)hi << 32) | lo);
    asm("sub.cc.u32 %0, %2, %4;\n\tsubc.u32 %1, %3, %5;" : "=r"(lo), "=r"(hi) : "r"(0u), "r"(5u), "r"(1u), "r"(2u));
    OUT(25, ((unsigned long long)hi << 32) | lo);
    // floating point
    asm("add.f32 %0, %1, %2;" : "=f"(f) : "f"(1.5f), "f"(2.25f)); OUT(30, f * 1000);
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(f) : "f"(fneg), "f"(4.0f)); OUT(31, (long long)f);
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(f) : "f"(2.0f), "f"(3.0f), "f"(0.5f)); OUT(32, f * 10);
    asm("div.rn.f32 %0, %1, %2;" : "=f"(f) : "f"(1.0f), "f"(8.0f)); OUT(33, f * 1000);
    asm("sqrt.rn.f32 %0, %1;" : "=f"(f) : "f"(2.25f)); OUT(34, f * 100);
    asm("rcp.approx.f32 %0, %1;" : "=f"(f) : "f"(4.0f)); OUT(35, f * 100);
    asm("ex2.approx.f32 %0, %1;" : "=f"(f) : "f"(5.0f)); OUT(36, f);
    asm("neg.f64 %0, %1;" : "=d"(d) : "d"(2.5)); OUT(37, (long long)(d * 10));
    asm("abs.f32 %0, %1;" : "=f"(f) : "f"(fneg)); OUT(38, f);
    asm("min.f32 %0, %1, %2;" : "=f"(f) : "f"(fneg), "f"(1.0f)); OUT(39, (long long)f);
    asm("mov.f32 %0, 0f3F800000;" : "=f"(f)); OUT(40, f * 7);                 // hex float immediate
    asm("mov.b32 %0, %1;" : "=r"(u) : "f"(1.0f)); OUT(41, u);                 // bits of a float
    // conversions
    asm("cvt.rni.s32.f32 %0, %1;" : "=r"(s) : "f"(2.5f)); OUT(50, s);
    asm("cvt.rni.s32.f32 %0, %1;" : "=r"(s) : "f"(3.5f)); OUT(51, s);
    asm("cvt.rzi.s32.f32 %0, %1;" : "=r"(s) : "f"(-2.7f)); OUT(52, (long long)s);
    asm("cvt.rmi.s32.f32 %0, %1;" : "=r"(s) : "f"(-2.2f)); OUT(53, (long long)s);
    asm("cvt.rpi.s32.f32 %0, %1;" : "=r"(s) : "f"(2.2f)); OUT(54, s);
    asm("cvt.rzi.s32.f32 %0, %1;" : "=r"(s) : "f"(1e10f)); OUT(55, s);       // clamped
    asm("cvt.sat.u8.s32 %0, %1;" : "=r"(u) : "r"(300)); OUT(56, u);
    asm("cvt.s64.s32 %0, %1;" : "=l"(l) : "r"(neg)); OUT(57, (long long)l);
    asm("cvt.rn.f32.s32 %0, %1;" : "=f"(f) : "r"(neg)); OUT(58, (long long)f);
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(1.0f)); OUT(59, h);
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)0x4200)); OUT(60, f * 10);
    asm("cvt.f64.f32 %0, %1;" : "=d"(d) : "f"(0.25f)); OUT(61, d * 100);
    asm("cvt.rni.f32.f32 %0, %1;" : "=f"(f) : "f"(2.6f)); OUT(62, f);
    asm("cvt.u32.u64 %0, %1;" : "=r"(u) : "l"(0x123456789ull)); OUT(63, u);
    // bit operations
    asm("and.b32 %0, %1, %2;" : "=r"(u) : "r"(0xf0f0u), "r"(0xff00u)); OUT(70, u);
    asm("or.b32 %0, %1, %2;" : "=r"(u) : "r"(0xf0f0u), "r"(0x0f00u)); OUT(71, u);
    asm("xor.b32 %0, %1, %2;" : "=r"(u) : "r"(0xf0f0u), "r"(0xffffu)); OUT(72, u);
    asm("not.b32 %0, %1;" : "=r"(u) : "r"(0u)); OUT(73, u);
    asm("shl.b32 %0, %1, %2;" : "=r"(u) : "r"(3u), "r"(4u)); OUT(74, u);
    asm("shl.b32 %0, %1, %2;" : "=r"(u) : "r"(3u), "r"(40u)); OUT(75, u);     // >= 32: zero
    asm("shr.s32 %0, %1, %2;" : "=r"(s) : "r"(-64), "r"(3u)); OUT(76, (long long)s);
    asm("shr.u32 %0, %1, %2;" : "=r"(u) : "r"(0x80000000u), "r"(31u)); OUT(77, u);
    asm("brev.b32 %0, %1;" : "=r"(u) : "r"(1u)); OUT(78, u);
    asm("popc.b64 %0, %1;" : "=r"(u) : "l"(0xff000000000000ffull)); OUT(79, u);
    asm("clz.b32 %0, %1;" : "=r"(u) : "r"(0x00010000u)); OUT(80, u);
    asm("bfind.u32 %0, %1;" : "=r"(u) : "r"(0x00010000u)); OUT(81, u);
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(u) : "r"(0xabcd1234u), "r"(8), "r"(12)); OUT(82, u);
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(s) : "r"(0x0000f000), "r"(12), "r"(4)); OUT(83, (long long)s);
    asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(u) : "r"(0xfu), "r"(0x12345678u), "r"(8), "r"(4)); OUT(84, u);
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(u) : "r"(0x33221100u), "r"(0x77665544u), "r"(0x7531u)); OUT(85, u);
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(u) : "r"(0x000080ffu), "r"(0u), "r"(0x9810u)); OUT(86, u);
    asm("prmt.b32.f4e %0, %1, %2, %3;" : "=r"(u) : "r"(0x33221100u), "r"(0x77665544u), "r"(2u)); OUT(87, u);
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(u) : "r"(0xf0u), "r"(0xccu), "r"(0xaau)); OUT(88, u);
    asm("mov.b64 %0, {%1, %2};" : "=l"(l) : "r"(0x11111111u), "r"(0x22222222u)); OUT(89, l);
    asm("mov.b64 {%0, %1}, %2;" : "=r"(lo), "=r"(hi) : "l"(0xaaaabbbbccccddddull)); OUT(90, hi - lo);
    // predicates
    asm("{\n\t.reg .pred p;\n\tsetp.lt.s32 p, %1, %2;\n\tselp.u32 %0, 10, 20, p;\n}" : "=r"(u) : "r"(neg), "r"(0));
    OUT(100, u);
    asm("{ .reg .pred p, q; setp.ge.u32 p|q, %1, %2; selp.u32 %0, 1, 2, q; }" : "=r"(u) : "r"(neg), "r"(0));
    OUT(101, u);
    asm("{ .reg .pred p; setp.gt.and.f32 p, %1, 0f00000000, 1; @p mov.u32 %0, 7; @!p mov.u32 %0, 8; }"
        : "=r"(u) : "f"(fneg));
    OUT(102, u);
    asm("{ .reg .pred p; testp.notanumber.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(u) : "f"(fin[2])); OUT(103, u);
    asm("{ .reg .pred p; setp.nan.f32 p, %1, %1; selp.u32 %0, 1, 0, p; }" : "=r"(u) : "f"(fin[2])); OUT(104, u);
    // scoped registers, named operands, in-out, immediates
    asm("{\n\t.reg .u32 t<2>;\n\tadd.u32 t0, %[a], 1;\n\tmul.lo.u32 t1, t0, %[b];\n\tmov.u32 %[r], t1;\n}"
        : [r] "=r"(u) : [a] "r"(4u), [b] "n"(3)); OUT(110, u);
    unsigned acc = 5;
    asm("add.u32 %0, %0, %1;" : "+r"(acc) : "n"(37)); OUT(111, acc);
    asm("mov.u32 %0, -1;" : "=r"(s)); OUT(112, (long long)s);
    asm("mov.u32 %0, 0x10;\n\t// a PTX comment\n\tadd.u32 %0, %0, 010;" : "=r"(u)); OUT(113, u);
    // SIMD video instructions (stereoDisparity's __usad4 is vabsdiff4 ... .add)
    asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(u) : "r"(0x10FF0305u), "r"(0x20000503u), "r"(7u));
    OUT(200, u);
    asm("vadd4.u32.u32.u32.sat %0, %1, %2, %3;" : "=r"(u) : "r"(0x01F08010u), "r"(0x0220A010u), "r"(0u)); OUT(201, u);
    asm("vsub2.s32.s32.s32.sat %0, %1, %2, %3;" : "=r"(u) : "r"(0x80000005u), "r"(0x00010009u), "r"(0u)); OUT(202, u);
    asm("vmax4.s32.s32.s32 %0, %1, %2, %3;" : "=r"(u) : "r"(0x7F80FF01u), "r"(0x01010101u), "r"(0u)); OUT(203, u);
    asm("vavrg2.u32.u32.u32 %0, %1, %2, %3;" : "=r"(u) : "r"(0x00030001u), "r"(0x00040002u), "r"(0u)); OUT(204, u);
    // memory
    asm("ld.global.u32 %0, [%1];" : "=r"(u) : "l"(mem)); OUT(120, u);
    asm("ld.global.u32 %0, [%1+4];" : "=r"(u) : "l"(mem)); OUT(121, u);
    float4 v;
    asm("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(fin));
    OUT(122, (long long)((v.x + v.y) * 100 + v.w));
    asm volatile("st.global.cs.v2.f32 [%0+8], {%1, %2};" :: "l"(fout), "f"(3.5f), "f"(4.5f) : "memory");
    asm volatile("st.volatile.global.u32 [%0], %1;" :: "l"(mem + 2), "r"(77u) : "memory");
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(u) : "l"(mem + 2)); OUT(123, u);
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(u) : "l"(mem + 2)); OUT(124, u);
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(mem + 3), "r"(9u));
    asm volatile("membar.gl;\n\tfence.sc.gpu;\n\tfence.acq_rel.cta;" ::: "memory");
    asm volatile("atom.global.cas.b32 %0, [%1], %2, %3;" : "=r"(u) : "l"(mem + 3), "r"(9u), "r"(11u)); OUT(125, u);
    asm volatile("atom.global.exch.b32 %0, [%1], %2;" : "=r"(u) : "l"(mem + 3), "r"(12u)); OUT(126, u);
    asm volatile("atom.global.min.s32 %0, [%1], %2;" : "=r"(s) : "l"(mem + 3), "r"(-4)); OUT(127, (long long)s);
    asm volatile("ld.global.u32 %0, [%1];" : "=r"(u) : "l"(mem + 3)); OUT(128, (long long)(int)u);
    asm volatile("atom.global.inc.u32 %0, [%1], %2;" : "=r"(u) : "l"(mem + 4), "r"(1u));
    asm volatile("atom.global.inc.u32 %0, [%1], %2;" : "=r"(u) : "l"(mem + 4), "r"(1u));   // wraps at 1
    asm volatile("ld.global.u32 %0, [%1];" : "=r"(u) : "l"(mem + 4)); OUT(129, u);
    asm volatile("prefetch.global.L2 [%0];" :: "l"(mem));
    unsigned long long g;
    asm("cvta.to.global.u64 %0, %1;" : "=l"(g) : "l"(mem)); OUT(130, g == (unsigned long long)mem);
}

__global__ void warp(unsigned* out, unsigned* counter, float* fsum) {
    unsigned t = threadIdx.x, u;
    unsigned* o = out + t * 16;
    asm("mov.u32 %0, %%laneid;" : "=r"(u)); o[0] = u;
    o[1] = lane_of();
    asm volatile("activemask.b32 %0;" : "=r"(u)); o[2] = u;
    asm volatile("shfl.sync.down.b32 %0, %1, 1, 0x1f, 0xffffffff;" : "=r"(u) : "r"(t * 10)); o[3] = u;
    asm volatile("shfl.sync.up.b32 %0, %1, 2, 0, 0xffffffff;" : "=r"(u) : "r"(t * 10)); o[4] = u;
    asm volatile("shfl.sync.bfly.b32 %0, %1, 3, 0x1f, 0xffffffff;" : "=r"(u) : "r"(t * 10)); o[5] = u;
    asm volatile("shfl.sync.idx.b32 %0, %1, 7, 0x1f, 0xffffffff;" : "=r"(u) : "r"(t * 10)); o[6] = u;
    // width 8 (c = (32 - 8) << 8 | 0x1f), with the in-range predicate
    asm volatile("{ .reg .pred p; shfl.sync.down.b32 %0|p, %1, 4, 0x181f, 0xffffffff; @!p add.u32 %0, %0, 1000; }"
                 : "=r"(u) : "r"(t * 10)); o[7] = u;
    asm volatile("{ .reg .pred p; setp.lt.u32 p, %1, 5; vote.sync.ballot.b32 %0, p, 0xffffffff; }" : "=r"(u) : "r"(t));
    o[8] = u;
    asm volatile("{ .reg .pred p, q; setp.lt.u32 p, %1, 40; vote.sync.all.pred q, p, 0xffffffff;"
                 " selp.u32 %0, 1, 0, q; }"
                 : "=r"(u) : "r"(t)); o[9] = u;
    asm volatile("{ .reg .pred p, q; setp.eq.u32 p, %1, 3; vote.sync.any.pred q, p, 0xffffffff; selp.u32 %0, 1, 0, q; }"
                 : "=r"(u) : "r"(t)); o[10] = u;
    asm volatile("match.any.sync.b32 %0, %1, 0xffffffff;" : "=r"(u) : "r"(t % 4)); o[11] = u;
    asm volatile("redux.sync.add.u32 %0, %1, 0xffffffff;" : "=r"(u) : "r"(t)); o[12] = u;
    asm volatile("redux.sync.max.u32 %0, %1, 0xffffffff;" : "=r"(u) : "r"(t * 3 % 17)); o[13] = u;
    asm volatile("atom.global.add.u32 %0, [%1], 1;" : "=r"(u) : "l"(counter));
    asm volatile("red.global.add.f32 [%0], %1;" :: "l"(fsum), "f"(0.5f));
    asm volatile("bar.sync 0;" ::: "memory");
    asm volatile("ld.global.u32 %0, [%1];" : "=r"(u) : "l"(counter)); o[14] = u;
    asm("mov.u32 %0, %%lanemask_le;" : "=r"(u)); o[15] = u;
}

int main() {
    unsigned long long* out; float *fin, *fout; unsigned *mem, *wout, *counter; float* fsum;
    cudaMallocManaged(&out, 256 * sizeof(unsigned long long));
    cudaMallocManaged(&fin, 4 * sizeof(float)); cudaMallocManaged(&fout, 4 * sizeof(float));
    cudaMallocManaged(&mem, 8 * sizeof(unsigned));
    cudaMallocManaged(&wout, 64 * 16 * sizeof(unsigned)); cudaMallocManaged(&counter, sizeof(unsigned));
    cudaMallocManaged(&fsum, sizeof(float));
    for (int i = 0; i < 256; ++i) out[i] = 0xdeadull;
    fin[0] = 1.25f; fin[1] = 2.5f; fin[2] = __builtin_nanf(""); fin[3] = 7.0f;
    for (int i = 0; i < 8; ++i) mem[i] = 100 + i;
    mem[4] = 0; *counter = 0; *fsum = 0;
    scalar<<<2, 64>>>(out, fin, fout, mem, -6, -2.5f);
    warp<<<1, 64>>>(wout, counter, fsum);
    printf("status %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    for (int i = 0; i < 256; ++i) if (out[i] != 0xdeadull) printf("s%d %lld\n", i, (long long)out[i]);
    for (int t = 0; t < 64; ++t) {
        printf("w%d", t);
        for (int j = 0; j < 16; ++j) printf(" %u", wout[t * 16 + j]);
        printf("\n");
    }
    printf("fout %.1f %.1f fsum %.1f\n", fout[2], fout[3], *fsum);
    return 0;
}
"""


@pytest.fixture(scope="module")
def run(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(PROGRAM, filename="ptx.cu", timeout=120)
    assert res.returncode == 0, res.stderr
    assert "status no error" in res.stdout, res.stdout
    scalars, warps = {}, {}
    for line in res.stdout.splitlines():
        m = re.fullmatch(r"s(\d+) (-?\d+)", line)
        if m:
            scalars[int(m.group(1))] = int(m.group(2))
        elif line.startswith("w"):
            parts = line.split()
            warps[int(parts[0][1:])] = [int(x) for x in parts[1:]]
        elif line.startswith("fout"):
            scalars["fout"] = line
    return scalars, warps


def _f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def test_special_registers(run):
    s, _ = run
    assert [s[i] for i in range(8)] == [5, 64, 1, 2, 0, (1 << 5) - 1, (~((1 << 5) - 1)) & 0xFFFFFFFF, 16]
    assert s[8] == 1   # %clock64 does not go backwards, %globaltimer (written with one '%') runs


def test_integer_arithmetic(run):
    s, _ = run
    assert s[10] == 0x80000000                  # add.s32 wraps
    assert s[11] == (3 - 5) & 0xFFFFFFFF
    assert s[12] == -42
    assert s[13] == 0xF                          # high word of 0xffffffff * 16
    assert s[14] == -6 * (1 << 30)               # mul.wide.s32
    assert s[15] == 50
    assert s[16] == 0x80000000 * 4 + 5          # mad.wide.u32
    assert (s[17], s[18]) == (-3, -1)           # truncating division
    assert (s[19], s[20], s[21], s[22]) == (-6, (-6) & 0xFFFFFFFF, 6, -9)
    assert s[23] == 0x7FFFFFFF                   # add.sat.s32 clamps
    assert s[24] == (5 << 32) | 1              # add.cc / addc: 0x1_ffffffff + 0x3_00000002
    assert s[25] == ((5 << 32) - (2 << 32 | 1)) & ((1 << 64) - 1)   # sub.cc / subc borrow chain


def test_floating_point(run):
    s, _ = run
    assert s[30] == 3750 and s[31] == -10 and s[32] == 65 and s[33] == 125
    assert s[34] == 150 and s[35] == 25 and s[36] == 32 and s[37] == -25
    assert s[38] == 2 and s[39] == -2            # abs.f32 of -2.5 truncated by the cast; min.f32
    assert s[40] == 7                            # 0f3F800000 == 1.0f
    assert s[41] == _f32_bits(1.0)               # mov.b32 copies a float's bits


def test_conversions(run):
    s, _ = run
    assert (s[50], s[51], s[52], s[53], s[54]) == (2, 4, -2, -3, 3)   # rni is round-half-even
    assert s[55] == 0x7FFFFFFF and s[56] == 255 and s[57] == -6 and s[58] == -6
    assert s[59] == 0x3C00                       # 1.0 as half
    assert s[60] == 30                           # half 0x4200 == 3.0
    assert s[61] == 25 and s[62] == 3 and s[63] == 0x23456789


def test_bit_operations(run):
    s, _ = run
    assert (s[70], s[71], s[72], s[73]) == (0xF000, 0xFFF0, 0x0F0F, 0xFFFFFFFF)
    assert (s[74], s[75], s[76], s[77]) == (48, 0, -8, 1)
    assert s[78] == 0x80000000 and s[79] == 16 and s[80] == 15 and s[81] == 16
    assert s[82] == 0xD12                        # bfe.u32: 12 bits from bit 8
    assert s[83] == -1                           # bfe.s32 replicates the field's sign
    assert s[84] == 0x12345F78                   # bfi: 4 bits at bit 8
    assert s[85] == 0x77553311                   # prmt selectors 1,3,5,7
    a, b, c = 0x000080FF, 0, 0x9810
    data = (b << 32) | a
    exp = 0
    for i in range(4):
        sel = (c >> (4 * i)) & 0xF
        v = (data >> (8 * (sel & 7))) & 0xFF
        if sel & 8:
            v = 0xFF if v & 0x80 else 0
        exp |= v << (8 * i)
    assert s[86] == exp                          # sign replication (selector bit 3)
    assert s[87] == 0x55443322                   # prmt.f4e, shift 2
    assert s[88] == 0xF0 ^ 0xCC ^ 0xAA           # lop3 0x96 = a ^ b ^ c
    assert s[89] == 0x2222222211111111 and s[90] == (0xAAAABBBB - 0xCCCCDDDD) & 0xFFFFFFFF

def test_predicates_and_scoped_registers(run):
    s, _ = run
    assert s[100] == 10 and s[101] == 2          # setp + selp; the complement destination
    assert s[102] == 8                           # @p / @!p guards: -2.5 > 0 is false
    assert s[103] == 1 and s[104] == 1           # testp.notanumber, setp.nan
    assert s[110] == 15                          # { .reg .u32 t<2>; } with %[named] operands and "n"
    assert s[111] == 42 and s[112] == -1 and s[113] == 0x10 + 8


def test_simd_video_instructions(run):
    s, _ = run
    assert s[200] == 0x10 + 0xFF + 2 + 2 + 7     # sum of |a_i - b_i| over bytes, plus c
    assert s[201] == 0x03FFFF20                   # bytewise unsigned add, saturating at 0xFF
    assert s[202] == 0x8000FFFC                   # -32768 - 1 saturates; 5 - 9 = -4
    assert s[203] == 0x7F010101                   # signed bytes: max(-128, 1) = 1, max(-1, 1) = 1
    assert s[204] == 0x00040002                   # (3 + 4 + 1) >> 1, (1 + 2 + 1) >> 1


def test_memory_and_atomics(run):
    s, _ = run
    assert s[120] == 100 and s[121] == 101
    assert s[122] == int((1.25 + 2.5) * 100 + 7)
    assert s[123] == 77 and s[124] == 77
    assert (s[125], s[126], s[127], s[128]) == (9, 11, 12, -4)   # cas, exch, min: old values; then the result
    assert s[129] == 0                           # atom.inc wraps past its bound
    assert s[130] == 1
    assert s["fout"] == "fout 3.5 4.5 fsum 32.0"


def test_warp_instructions(run):
    _, w = run
    assert len(w) == 64
    for t in range(64):
        lane, base = t % 32, t - t % 32
        row = w[t]
        assert row[0] == lane and row[1] == lane
        assert row[2] == 0xFFFFFFFF
        assert row[3] == (t + 1) * 10 if lane < 31 else row[3] == t * 10   # down clamps at lane 31
        assert row[4] == ((t - 2) * 10 if lane >= 2 else t * 10)
        assert row[5] == (base + (lane ^ 3)) * 10
        assert row[6] == (base + 7) * 10
        seg = lane - lane % 8
        assert row[7] == ((t + 4) * 10 if lane + 4 < seg + 8 else t * 10 + 1000)   # width 8, predicate
        assert row[8] == (0b11111 if base == 0 else 0)
        assert row[9] == (1 if base == 0 else 0)        # all lanes of warp 0 have t < 40; warp 1 does not
        assert row[10] == (1 if base == 0 else 0)
        assert row[11] == sum(1 << i for i in range(32) if i % 4 == lane % 4)
        assert row[12] == sum(range(base, base + 32))
        assert row[13] == max((x * 3) % 17 for x in range(base, base + 32))
        assert row[14] == 64                            # every thread's atom.add before bar.sync 0
        assert row[15] == (2 << lane) - 1 & 0xFFFFFFFF


# ---- translation and refusals --------------------------------------------------------------------

def test_translation_keeps_line_numbers_and_macros():
    src = ('#define LANE(r) asm("mov.u32 %0, %%laneid;" \\\n    : "=r"(r))\n'
           "__global__ void k(unsigned* o) {\n    unsigned x;\n    LANE(x);\n    asm volatile(\n"
           '        "mov.u32 %0, %%tid.x;"\n        : "=r"(o[1]));\n    o[0] = x;\n}\n')
    from veriforge.cuda.cpu.source import rewrite, scan

    out = rewrite(scan(src))
    assert out.count("\n") == src.count("\n")
    assert "::vf::ptx::laneid()" in out and "asm" not in out
    assert out.splitlines()[8].strip() == "o[0] = x;"


@pytest.mark.parametrize("body, named, why", [
    ('"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0}, {%1}, {%2}, {%3};" : "=f"(x) : "r"(a), "r"(b), "f"(c)',
     "mma.sync.aligned.m16n8k16", "outside the supported PTX subset"),
    ('"ld.shared.u32 %0, [%1];" : "=r"(x) : "r"(a)', "ld.shared.u32 %0, [%1]", "32-bit address"),
    ('"L1: bra L1;"', "L1: bra L1", "labels and branches"),
    ('"vabsdiff4.u32.u32.u32.add %0.b0, %1, %2, %3;" : "=r"(x) : "r"(a), "r"(b), "r"(a)', "vabsdiff4",
     "selectors"),
    ('"cvt.s32.f32 %0, %1;" : "=r"(x) : "f"(c)', "cvt.s32.f32", ".rni/.rzi"),
    ('"mov.u32 %0, %%envreg3;" : "=r"(x)', "%envreg3", "special register"),
    ('PTX_STRING : "=r"(x)', "PTX_STRING", "not a string literal"),
    ('"add.u32 %0, %1, %2;" : "=r"(x) : "m"(a), "r"(b)', '"m"', "constraint"),
    ('"shfl.down.b32 %0, %1, 1, 0x1f;" : "=r"(x) : "r"(a)', "shfl.down.b32", "use shfl.sync"),
])
def test_outside_the_subset_is_refused_naming_the_instruction(body, named, why):
    with pytest.raises(PtxError) as info:
        translate(parse_asm(body))
    assert named in f"{info.value.instruction} {info.value.reason}" and why in info.value.reason


def test_refusal_names_file_line_and_instruction():
    src = ("__global__ void k(float* x) {\n    unsigned a = 1, b = 2;\n    float c = 0;\n"
           '    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0}, {%1}, {%2}, {%0};"\n'
           '        : "+f"(c) : "r"(a), "r"(b));\n    x[0] = c;\n}\nint main() { return 0; }\n')
    with pytest.raises(cpu.UnsupportedFeatureError) as info:
        cpu.run_program(src, filename="mma.cu")
    msg = str(info.value)
    assert "inline PTX assembly" in msg and "'mma.sync.aligned.m16n8k8" in msg and "(mma.cu:4:" in msg


def test_translated_code_is_deterministic():
    stmt = parse_asm('"{ .reg .u32 t; add.u32 t, %1, 1; mov.u32 %0, t; }" : "=r"(x) : "r"(y)')
    assert translate(stmt) == translate(stmt)
