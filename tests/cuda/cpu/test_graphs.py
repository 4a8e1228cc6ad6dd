"""CUDA graphs in the CPU runtime (runtime/graphs.cpp): explicit construction with every node kind,
instantiation and launch in dependency order, node queries, cloning, parameter updates, executable
graph updates (CUDA 12 and CUDA 11 signatures), stream capture (fork/join through events, capture
modes, invalidation), graph memory nodes with their memory attributes, and conditional nodes driven
by device-side cudaGraphSetConditional - each a real g++ build of a CUDA program."""

from __future__ import annotations

import pytest

from veriforge.cuda import cpu

EXPLICIT = r"""
#include <cstdio>
#include <cstring>
#include <vector>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("FAIL %s line %d: %s\n", #x, __LINE__, cudaGetErrorName(e_)); return 1; } } while (0)

__global__ void fill(int* a, int v, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = v + i; }
__global__ void scale(int* a, int f, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= f; }
__global__ void add2(const int* a, const int* b, int* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i];
}
template <int K> __global__ void tmpl(int* a) { a[threadIdx.x] = K; }

static char g_log[64]; static int g_nlog = 0;
void CUDART_CB note(void* p) { g_log[g_nlog++] = *(const char*)p; g_log[g_nlog] = 0; }

int main() {
    const int n = 200;
    int *a, *b, *c, h[n];
    CHECK(cudaMalloc(&a, n * sizeof(int))); CHECK(cudaMalloc(&b, n * sizeof(int)));
    CHECK(cudaMalloc(&c, n * sizeof(int)));
    cudaGraph_t g; CHECK(cudaGraphCreate(&g, 0));
    // memset(c) ; fill(a) -> scale(a)  and  fill(b) ; add2(a, b) -> copy to host -> host note
    cudaMemsetParams ms = {}; ms.dst = c; ms.value = 0x01010101; ms.elementSize = 4; ms.width = n; ms.height = 1;
    cudaGraphNode_t nset, nfa, nfb, nsc, nadd, ncopy, nhost, nempty;
    CHECK(cudaGraphAddMemsetNode(&nset, g, nullptr, 0, &ms));
    int n_ = n, va = 1, vb = 1000, f = 3;
    void* fa[] = {&a, &va, &n_};
    cudaKernelNodeParams kp = {}; kp.func = (void*)fill; kp.gridDim = dim3((n + 63) / 64); kp.blockDim = dim3(64);
    kp.kernelParams = fa;
    CHECK(cudaGraphAddKernelNode(&nfa, g, nullptr, 0, &kp));
    va = 999;   // the node copied its arguments when it was added
    void* fb[] = {&b, &vb, &n_}; kp.kernelParams = fb;
    CHECK(cudaGraphAddKernelNode(&nfb, g, nullptr, 0, &kp));
    void* sa[] = {&a, &f, &n_}; kp.func = (void*)scale; kp.kernelParams = sa;
    CHECK(cudaGraphAddKernelNode(&nsc, g, &nfa, 1, &kp));
    cudaGraphNode_t deps[] = {nsc, nfb, nset};
    void* ad[] = {&a, &b, &c, &n_}; kp.func = (void*)add2; kp.kernelParams = ad;
    CHECK(cudaGraphAddKernelNode(&nadd, g, deps, 3, &kp));
    CHECK(cudaGraphAddMemcpyNode1D(&ncopy, g, &nadd, 1, h, c, sizeof h, cudaMemcpyDeviceToHost));
    static const char tagA = 'A', tagB = 'B', tagC = 'C';
    cudaHostNodeParams hp = {note, (void*)&tagC};
    CHECK(cudaGraphAddHostNode(&nhost, g, &ncopy, 1, &hp));
    CHECK(cudaGraphAddEmptyNode(&nempty, g, &nhost, 1));

    size_t count = 0; CHECK(cudaGraphGetNodes(g, nullptr, &count)); printf("nodes %zu\n", count);
    CHECK(cudaGraphGetRootNodes(g, nullptr, &count)); printf("roots %zu\n", count);
    CHECK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &count)); printf("edges %zu\n", count);
    size_t nd = 0; CHECK(cudaGraphNodeGetDependencies(nadd, nullptr, nullptr, &nd));
    size_t nout = 0; CHECK(cudaGraphNodeGetDependentNodes(nfa, nullptr, nullptr, &nout));
    printf("add deps %zu fill-a dependents %zu\n", nd, nout);
    cudaGraphNodeType t1, t2, t3;
    cudaGraphNodeGetType(nadd, &t1); cudaGraphNodeGetType(ncopy, &t2); cudaGraphNodeGetType(nset, &t3);
    printf("types %d %d %d\n", (int)t1, (int)t2, (int)t3);
    cudaKernelNodeParams back = {}; CHECK(cudaGraphKernelNodeGetParams(nfa, &back));
    printf("params func-ok %d grid %u block %u arg1 %d\n", back.func == (void*)fill, back.gridDim.x, back.blockDim.x,
           *(int*)back.kernelParams[1]);

    cudaGraphExec_t ex; CHECK(cudaGraphInstantiate(&ex, g, 0));
    CHECK(cudaGraphLaunch(ex, 0)); CHECK(cudaStreamSynchronize(0));
    printf("run1 %d %d %d log %s\n", h[0], h[1], h[n - 1], g_log);
    // executable-graph parameter update: only the instance changes
    int f2 = 5; void* sa2[] = {&a, &f2, &n_}; kp.func = (void*)scale; kp.kernelParams = sa2;
    CHECK(cudaGraphExecKernelNodeSetParams(ex, nsc, &kp));
    CHECK(cudaGraphLaunch(ex, 0));
    printf("run2 %d\n", h[0]);
    cudaGraphExec_t ex2; CHECK(cudaGraphInstantiate(&ex2, g, 0));
    CHECK(cudaGraphLaunch(ex2, 0));
    printf("run3 %d\n", h[0]);
    // node parameter update in the graph, a clone keeps the old one
    cudaGraph_t cl; CHECK(cudaGraphClone(&cl, g));
    cudaGraphNode_t in_clone; CHECK(cudaGraphNodeFindInClone(&in_clone, nsc, cl));
    CHECK(cudaGraphKernelNodeSetParams(nsc, &kp));
    cudaGraphExec_t exg, exc; CHECK(cudaGraphInstantiate(&exg, g, 0)); CHECK(cudaGraphInstantiate(&exc, cl, 0));
    CHECK(cudaGraphLaunch(exg, 0)); printf("graph-updated %d\n", h[0]);
    CHECK(cudaGraphLaunch(exc, 0)); printf("clone %d\n", h[0]);
    // disabling a node
    CHECK(cudaGraphNodeSetEnabled(exg, nsc, 0));
    CHECK(cudaGraphLaunch(exg, 0)); printf("disabled %d\n", h[0]);
    unsigned en = 9; CHECK(cudaGraphNodeGetEnabled(exg, nsc, &en)); printf("enabled %u\n", en);
    // child graph and event nodes
    cudaGraph_t parent; CHECK(cudaGraphCreate(&parent, 0));
    cudaGraphNode_t child, rec; CHECK(cudaGraphAddChildGraphNode(&child, parent, nullptr, 0, cl));
    cudaEvent_t ev; cudaEventCreate(&ev);
    CHECK(cudaGraphAddEventRecordNode(&rec, parent, &child, 1, ev));
    cudaGraphExec_t exp; CHECK(cudaGraphInstantiate(&exp, parent, 0));
    g_nlog = 0; CHECK(cudaGraphLaunch(exp, 0));
    printf("child %d log %s query %s\n", h[0], g_log, cudaGetErrorName(cudaEventQuery(ev)));
    // dependency order, not creation order: B is created first but depends on A
    cudaGraph_t og; CHECK(cudaGraphCreate(&og, 0));
    cudaGraphNode_t hb, ha; cudaHostNodeParams pb = {note, (void*)&tagB}, pa = {note, (void*)&tagA};
    CHECK(cudaGraphAddHostNode(&hb, og, nullptr, 0, &pb)); CHECK(cudaGraphAddHostNode(&ha, og, nullptr, 0, &pa));
    CHECK(cudaGraphAddDependencies(og, &ha, &hb, nullptr, 1));
    cudaGraphExec_t eo; CHECK(cudaGraphInstantiate(&eo, og, 0));
    g_nlog = 0; CHECK(cudaGraphLaunch(eo, 0)); printf("order %s\n", g_log);
    CHECK(cudaGraphAddDependencies(og, &hb, &ha, nullptr, 1));   // now a cycle
    cudaGraphExec_t bad = nullptr; printf("cycle %s\n", cudaGetErrorName(cudaGraphInstantiate(&bad, og, 0)));
    CHECK(cudaGraphDebugDotPrint(g, "graph.dot", 0));
    FILE* dot = fopen("graph.dot", "r"); char buf[4096] = {0}; fread(buf, 1, sizeof buf - 1, dot); fclose(dot);
    printf("dot %d %d\n", strstr(buf, "digraph") != nullptr, strstr(buf, "add2") != nullptr);
    // a kernel the registry cannot find (a template instance) is an error, not a wrong run
    void* ta[] = {&a}; kp.func = (void*)tmpl<3>; kp.kernelParams = ta; kp.gridDim = dim3(1); kp.blockDim = dim3(1);
    cudaGraphNode_t nt; printf("template %s\n", cudaGetErrorName(cudaGraphAddKernelNode(&nt, g, nullptr, 0, &kp)));
    CHECK(cudaGraphExecDestroy(ex)); CHECK(cudaGraphExecDestroy(ex2)); CHECK(cudaGraphExecDestroy(exg));
    CHECK(cudaGraphExecDestroy(exc)); CHECK(cudaGraphExecDestroy(exp)); CHECK(cudaGraphExecDestroy(eo));
    CHECK(cudaGraphDestroy(g)); CHECK(cudaGraphDestroy(cl));
    CHECK(cudaGraphDestroy(parent)); CHECK(cudaGraphDestroy(og));
    printf("done\n");
    return 0;
}
"""


@pytest.fixture(scope="module")
def explicit(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(EXPLICIT, filename="explicit.cu", timeout=120)
    assert res.returncode == 0 and "done" in res.stdout, res.stdout + res.stderr
    return res


def test_explicit_graph_structure_and_queries(explicit):
    out = explicit.stdout
    assert "nodes 8\n" in out and "roots 3\n" in out and "edges 7\n" in out
    assert "add deps 3 fill-a dependents 1\n" in out
    assert "types 0 1 2\n" in out                         # kernel, memcpy, memset
    assert "params func-ok 1 grid 4 block 64 arg1 1\n" in out   # arguments copied when the node was added


def test_explicit_graph_runs_in_dependency_order(explicit):
    out = explicit.stdout
    # c = 3 * (1 + i) + (1000 + i), the memset (0x01010101 per int) overwritten by add2
    assert f"run1 {3 * 1 + 1000} {3 * 2 + 1001} {3 * 200 + 1199} log C\n" in out
    assert "order AB\n" in out                            # B was created first but depends on A
    assert "cycle cudaErrorInvalidValue\n" in out


def test_parameter_updates_clone_and_enable(explicit):
    out = explicit.stdout
    assert "run2 1005\n" in out          # cudaGraphExecKernelNodeSetParams: scale by 5 in that instance
    assert "run3 1003\n" in out          # a fresh instance of the graph still scales by 3
    assert "graph-updated 1005\n" in out and "clone 1003\n" in out
    assert "disabled 1001\n" in out and "enabled 0\n" in out
    assert "child 1003 log C query cudaSuccess\n" in out
    assert "dot 1 1\n" in out


def test_unregistered_kernel_node_is_an_error(explicit):
    assert "template cudaErrorInvalidDeviceFunction\n" in explicit.stdout
    assert "is not a kernel of this program" in explicit.stderr


CAPTURE = r"""
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("FAIL %s line %d: %s\n", #x, __LINE__, cudaGetErrorName(e_)); return 1; } } while (0)

__global__ void set(int* a, int v) { a[threadIdx.x] = v; }
__global__ void add(int* a, int v) { a[threadIdx.x] += v; }
__global__ void mul(int* a, int v) { a[threadIdx.x] *= v; }
__global__ void sum2(const int* a, const int* b, int* c) { c[threadIdx.x] = a[threadIdx.x] + b[threadIdx.x]; }
void CUDART_CB host(void* p) { printf("host sees %d\n", *(int*)p); }

int main() {
    int *a, *b, *c, h[32] = {0};
    cudaMalloc(&a, 128); cudaMalloc(&b, 128); cudaMalloc(&c, 128);
    cudaStream_t s1, s2, s3; cudaStreamCreate(&s1); cudaStreamCreate(&s2); cudaStreamCreate(&s3);
    cudaEvent_t fork, j2, j3; cudaEventCreate(&fork); cudaEventCreate(&j2); cudaEventCreate(&j3);
    cudaGraph_t g;
    int v = 4;
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    set<<<1, 32, 0, s1>>>(a, 1);
    CHECK(cudaEventRecord(fork, s1));
    CHECK(cudaStreamWaitEvent(s2, fork, 0));              // s2 joins the capture
    CHECK(cudaStreamWaitEvent(s3, fork, 0));
    add<<<1, 32, 0, s2>>>(a, v);                          // v is captured by value now
    CHECK(cudaMemsetAsync(b, 0, 128, s3));
    set<<<1, 32, 0, s3>>>(b, 10);
    CHECK(cudaEventRecord(j2, s2)); CHECK(cudaEventRecord(j3, s3));
    CHECK(cudaStreamWaitEvent(s1, j2, 0)); CHECK(cudaStreamWaitEvent(s1, j3, 0));
    sum2<<<1, 32, 0, s1>>>(a, b, c);
    CHECK(cudaMemcpyAsync(h, c, 128, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaLaunchHostFunc(s1, host, h));
    v = 1000;
    cudaStreamCaptureStatus st; CHECK(cudaStreamIsCapturing(s2, &st));
    unsigned long long id = 0; const cudaGraphNode_t* deps = nullptr; size_t ndeps = 0; cudaGraph_t cg = nullptr;
    CHECK(cudaStreamGetCaptureInfo(s1, &st, &id, &cg, &deps, nullptr, &ndeps));
    printf("capturing %d deps %zu id %d nothing-ran %d\n", (int)st, ndeps, id > 0, h[0]);
    CHECK(cudaStreamEndCapture(s1, &g));
    printf("same graph %d\n", cg == g);
    size_t count; cudaGraphGetNodes(g, nullptr, &count); printf("nodes %zu\n", count);
    cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &count); printf("edges %zu\n", count);
    cudaGraphGetRootNodes(g, nullptr, &count); printf("roots %zu\n", count);
    CHECK(cudaStreamIsCapturing(s2, &st)); printf("after end %d\n", (int)st);
    cudaGraphExec_t ex; CHECK(cudaGraphInstantiate(&ex, g, 0));
    CHECK(cudaGraphLaunch(ex, s1)); CHECK(cudaStreamSynchronize(s1));
    printf("result %d %d\n", h[0], h[31]);

    // capture into an instance update: same topology, new arguments (CUDA 12 and CUDA 11 forms)
    cudaGraph_t g2;
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
    set<<<1, 32, 0, s1>>>(a, 7);
    add<<<1, 32, 0, s1>>>(a, 2);
    CHECK(cudaMemcpyAsync(h, a, 128, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamEndCapture(s1, &g2));
    cudaGraphExec_t e2; CHECK(cudaGraphInstantiate(&e2, g2, 0));
    CHECK(cudaGraphLaunch(e2, s1)); printf("update-before %d\n", h[0]);
    cudaGraph_t g3;
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    set<<<1, 32, 0, s1>>>(a, 20);
    add<<<1, 32, 0, s1>>>(a, 3);
    CHECK(cudaMemcpyAsync(h, a, 128, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamEndCapture(s1, &g3));
    cudaGraphExecUpdateResultInfo info;
    CHECK(cudaGraphExecUpdate(e2, g3, &info));
    CHECK(cudaGraphLaunch(e2, s1)); printf("update-after %d result %d\n", h[0], (int)info.result);
    cudaGraph_t g4;   // different topology: the update is refused
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    set<<<1, 32, 0, s1>>>(a, 1);
    CHECK(cudaStreamEndCapture(s1, &g4));
    cudaGraphNode_t err_node; cudaGraphExecUpdateResult r11;
    cudaError_t e = cudaGraphExecUpdate(e2, g4, &err_node, &r11);     // CUDA 11's signature
    printf("topology %s %d\n", cudaGetErrorName(e), (int)r11);
    cudaGraph_t g5;   // a different kernel in the same place
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    set<<<1, 32, 0, s1>>>(a, 1);
    mul<<<1, 32, 0, s1>>>(a, 3);
    CHECK(cudaMemcpyAsync(h, a, 128, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamEndCapture(s1, &g5));
    e = cudaGraphExecUpdate(e2, g5, &info);
    printf("function %s %d\n", cudaGetErrorName(e), (int)info.result);

    // unsafe calls during a global capture invalidate it; relaxed mode allows them
    void* p = nullptr; cudaGraph_t gi = nullptr;
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    printf("malloc %s\n", cudaGetErrorName(cudaMalloc(&p, 16)));
    set<<<1, 32, 0, s1>>>(a, 1);
    CHECK(cudaStreamIsCapturing(s1, &st)); printf("status %d\n", (int)st);
    printf("end %s graph-null %d\n", cudaGetErrorName(cudaStreamEndCapture(s1, &gi)), gi == nullptr);
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed; CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    printf("relaxed malloc %s old-mode %d\n", cudaGetErrorName(cudaMalloc(&p, 16)), (int)mode);
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    printf("sync %s\n", cudaGetErrorName(cudaStreamSynchronize(s1)));
    printf("end %s\n", cudaGetErrorName(cudaStreamEndCapture(s1, &gi)));
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, s1)); CHECK(cudaStreamWaitEvent(s2, fork, 0));
    printf("end-from-other %s\n", cudaGetErrorName(cudaStreamEndCapture(s2, &gi)));
    CHECK(cudaStreamEndCapture(s1, &gi));
    printf("legacy %s\n", cudaGetErrorName(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal)));
    // capture into an existing graph, with dependencies, and a graph launched into a capture
    cudaGraph_t outer; CHECK(cudaGraphCreate(&outer, 0));
    cudaGraphNode_t first; CHECK(cudaGraphAddEmptyNode(&first, outer, nullptr, 0));
    CHECK(cudaStreamBeginCaptureToGraph(s3, outer, &first, nullptr, 1, cudaStreamCaptureModeGlobal));
    CHECK(cudaGraphLaunch(ex, s3));                        // becomes a child-graph node
    CHECK(cudaStreamGetCaptureInfo(s3, &st, nullptr, nullptr, &deps, nullptr, &ndeps));
    cudaGraphNodeType ty; cudaGraphNodeGetType(deps[0], &ty);
    printf("child node type %d deps %zu\n", (int)ty, ndeps);
    CHECK(cudaStreamEndCapture(s3, nullptr));
    cudaGraphGetEdges(outer, nullptr, nullptr, nullptr, &count); printf("outer edges %zu\n", count);
    cudaGraphExec_t eo; CHECK(cudaGraphInstantiate(&eo, outer, 0));
    h[0] = 0; CHECK(cudaGraphLaunch(eo, 0)); printf("outer result %d\n", h[0]);
    printf("done\n");
    return 0;
}
"""


@pytest.fixture(scope="module")
def capture(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(CAPTURE, filename="capture.cu", timeout=120)
    assert res.returncode == 0 and "done" in res.stdout, res.stdout + res.stderr
    return res


def test_capture_records_instead_of_running(capture):
    out = capture.stdout
    assert "capturing 1 deps 1 id 1 nothing-ran 0\n" in out   # the host function did not run during capture
    assert "same graph 1\n" in out
    assert "nodes 7\n" in out and "roots 1\n" in out
    # set->add, set->memset, memset->set(b), add->sum, set(b)->sum, sum->copy, copy->host, and set->sum: the join
    # adds the events' nodes to s1's own dependency set
    assert "edges 8\n" in out
    assert "after end 0\n" in out


def test_captured_graph_runs_with_arguments_taken_at_capture(capture):
    out = capture.stdout
    assert "host sees 15\n" in out           # (1 + 4) + 10: v was 4 when captured, 1000 later
    assert "result 15 15\n" in out


def test_exec_update(capture):
    out = capture.stdout
    assert "update-before 9\n" in out and "update-after 23 result 0\n" in out
    assert "topology cudaErrorGraphExecUpdateFailure 2\n" in out      # cudaGraphExecUpdateErrorTopologyChanged
    assert "function cudaErrorGraphExecUpdateFailure 4\n" in out      # cudaGraphExecUpdateErrorFunctionChanged


def test_capture_modes_and_invalidation(capture):
    out = capture.stdout
    assert "malloc cudaErrorStreamCaptureUnsupported\n" in out and "status 2\n" in out
    assert "end cudaErrorStreamCaptureInvalidated graph-null 1\n" in out
    assert "relaxed malloc cudaSuccess old-mode 0\n" in out
    assert "sync cudaErrorStreamCaptureUnsupported\n" in out
    assert "end-from-other cudaErrorStreamCaptureUnmatched\n" in out
    assert "legacy cudaErrorStreamCaptureUnsupported\n" in out


def test_capture_to_graph_and_graph_launch_in_capture(capture):
    out = capture.stdout
    assert "child node type 4 deps 1\n" in out and "outer edges 1\n" in out
    assert "outer result 15\n" in out
    assert out.count("host sees 15\n") == 2   # the captured graph's launch, then again inside the outer graph


MEMORY = r"""
#include <cstdio>
#include <cstdint>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("FAIL %s line %d: %s\n", #x, __LINE__, cudaGetErrorName(e_)); return 1; } } while (0)
__global__ void iota(int* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = i; }
__global__ void twice(const int* a, int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = 2 * a[i];
}
static unsigned long long used() {
    uint64_t v = 0; cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &v); return v;
}

int main() {
    const int n = 1 << 16; const size_t bytes = n * sizeof(int);
    cudaMemAllocNodeParams ap = {}; ap.bytesize = bytes;
    ap.poolProps.allocType = cudaMemAllocationTypePinned; ap.poolProps.location.type = cudaMemLocationTypeDevice;
    cudaGraph_t g; CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t alloc_a, alloc_b, k1, k2, free_a, alloc_c, free_c;
    CHECK(cudaGraphAddMemAllocNode(&alloc_a, g, nullptr, 0, &ap)); int* a = (int*)ap.dptr;
    CHECK(cudaGraphAddMemAllocNode(&alloc_b, g, &alloc_a, 1, &ap)); int* b = (int*)ap.dptr;
    int n_ = n; void* args1[] = {&a, &n_};
    cudaKernelNodeParams kp = {}; kp.func = (void*)iota; kp.gridDim = dim3(n / 256); kp.blockDim = dim3(256);
    kp.kernelParams = args1;
    CHECK(cudaGraphAddKernelNode(&k1, g, &alloc_b, 1, &kp));
    void* args2[] = {&a, &b, &n_}; kp.func = (void*)twice; kp.kernelParams = args2;
    CHECK(cudaGraphAddKernelNode(&k2, g, &k1, 1, &kp));
    CHECK(cudaGraphAddMemFreeNode(&free_a, g, &k2, 1, a));
    CHECK(cudaGraphAddMemAllocNode(&alloc_c, g, &free_a, 1, &ap)); int* c = (int*)ap.dptr;
    CHECK(cudaGraphAddMemFreeNode(&free_c, g, &alloc_c, 1, c));
    printf("addresses a!=b %d c==a %d\n", a != b, c == a);
    cudaMemAllocNodeParams back; CHECK(cudaGraphMemAllocNodeGetParams(alloc_b, &back));
    void* fp = nullptr; CHECK(cudaGraphMemFreeNodeGetParams(free_a, &fp));
    printf("params %d %d\n", back.dptr == b && back.bytesize == bytes, fp == a);
    cudaGraphExec_t ex; CHECK(cudaGraphInstantiate(&ex, g, 0));
    printf("before %llu\n", used());
    CHECK(cudaGraphLaunch(ex, 0));
    int h[4]; CHECK(cudaMemcpy(h, b + n - 4, sizeof h, cudaMemcpyDeviceToHost));
    printf("after %llu b %d %d\n", used(), h[0], h[3]);
    printf("relaunch %s\n", cudaGetErrorName(cudaGraphLaunch(ex, 0)));   // b was never freed
    CHECK(cudaFree(b));                                                   // cudaFree of graph memory
    printf("double free %s\n", cudaGetErrorName(cudaFree(b)));
    CHECK(cudaGraphLaunch(ex, 0));
    CHECK(cudaFree(b));
    printf("still %llu\n", used());
    CHECK(cudaDeviceGraphMemTrim(0));
    printf("trimmed %llu\n", used());
    uint64_t high = 0; CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &high));
    printf("high %llu\n", (unsigned long long)high);
    uint64_t zero = 0; CHECK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero));
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &high));
    printf("high reset %llu\n", (unsigned long long)high);
    cudaGraphExec_t auto_free;
    CHECK(cudaGraphInstantiateWithFlags(&auto_free, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    CHECK(cudaGraphLaunch(auto_free, 0)); CHECK(cudaGraphLaunch(auto_free, 0));
    printf("auto free ok\n");
    CHECK(cudaFree(b));
    // captured stream-ordered allocation
    cudaStream_t s; cudaStreamCreate(&s);
    int* d; cudaGraph_t cg;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMallocAsync(&d, bytes, s));
    iota<<<n / 256, 256, 0, s>>>(d, n);
    CHECK(cudaMemcpyAsync(h, d + 10, sizeof h, cudaMemcpyDeviceToHost, s));
    CHECK(cudaFreeAsync(d, s));
    CHECK(cudaStreamEndCapture(s, &cg));
    cudaGraphNode_t nodes[8]; size_t count = 8; CHECK(cudaGraphGetNodes(cg, nodes, &count));
    cudaGraphNodeType t0, t3; cudaGraphNodeGetType(nodes[0], &t0); cudaGraphNodeGetType(nodes[3], &t3);
    printf("captured %zu types %d %d\n", count, (int)t0, (int)t3);
    cudaGraphExec_t ce; CHECK(cudaGraphInstantiate(&ce, cg, 0));
    CHECK(cudaDeviceGraphMemTrim(0));
    CHECK(cudaGraphLaunch(ce, s)); CHECK(cudaGraphLaunch(ce, s));
    printf("captured run %d %d used %llu\n", h[0], h[3], used());
    printf("done\n");
    return 0;
}
"""


def test_graph_memory_nodes_and_attributes(cpu_session_home, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    res = cpu.run_program(MEMORY, filename="memory.cu", timeout=120)
    assert res.returncode == 0 and "done" in res.stdout, res.stdout + res.stderr
    out, size = res.stdout, (1 << 16) * 4
    assert "addresses a!=b 1 c==a 1\n" in out     # c's allocation follows a's free: the address is reused
    assert "params 1 1\n" in out
    assert "before 0\n" in out                    # instantiating reserves no memory
    assert f"after {2 * size} b {2 * ((1 << 16) - 4)} {2 * ((1 << 16) - 1)}\n" in out
    assert "relaunch cudaErrorInvalidValue\n" in out and "graph allocation" in res.stderr
    assert "double free cudaErrorInvalidValue\n" in out
    assert f"still {2 * size}\n" in out and "trimmed 0\n" in out   # freed memory stays until trimmed
    assert f"high {2 * size}\n" in out and "high reset 0\n" in out
    assert "auto free ok\n" in out
    assert "captured 4 types 10 11\n" in out      # mem-alloc ... mem-free nodes
    assert f"captured run 10 13 used {size}\n" in out


CONDITIONAL = r"""
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("FAIL %s line %d: %s\n", #x, __LINE__, cudaGetErrorName(e_)); return 1; } } while (0)
__global__ void step(int* counter, int* trace, cudaGraphConditionalHandle h) {
    int c = ++*counter;
    trace[c] = c * 10;
    cudaGraphSetConditional(h, c < 5);           // loop while fewer than 5 iterations ran
}
__global__ void decide(const int* v, cudaGraphConditionalHandle h) { cudaGraphSetConditional(h, *v); }
__global__ void mark(int* out, int k) { out[k] += 1; }

int main() {
    int *counter, *trace, *v, *out;
    cudaMallocManaged(&counter, 4); cudaMallocManaged(&trace, 64 * 4);
    cudaMallocManaged(&v, 4); cudaMallocManaged(&out, 64);
    cudaMemset(out, 0, 64);
    // while loop, with the handle's default value 1 assigned at each launch
    cudaGraph_t g; CHECK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h; CHECK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
    cudaGraphNodeParams cp = {cudaGraphNodeTypeConditional};
    cp.conditional.handle = h; cp.conditional.type = cudaGraphCondTypeWhile; cp.conditional.size = 1;
    cudaGraphNode_t cond; CHECK(cudaGraphAddNode(&cond, g, nullptr, nullptr, 0, &cp));
    cudaStream_t s; cudaStreamCreate(&s);
    CHECK(cudaStreamBeginCaptureToGraph(s, cp.conditional.phGraph_out[0], nullptr, nullptr, 0,
                                        cudaStreamCaptureModeGlobal));
    step<<<1, 1, 0, s>>>(counter, trace, h);
    CHECK(cudaStreamEndCapture(s, nullptr));
    cudaGraphExec_t ex; CHECK(cudaGraphInstantiate(&ex, g, 0));
    *counter = 0; CHECK(cudaGraphLaunch(ex, 0)); CHECK(cudaDeviceSynchronize());
    printf("while %d %d %d\n", *counter, trace[1], trace[5]);
    *counter = 10; CHECK(cudaGraphLaunch(ex, 0)); CHECK(cudaDeviceSynchronize());
    printf("while-again %d\n", *counter);          // default 1: the body runs once, then stops
    // if / else and switch, each decided by a kernel upstream
    for (int kind = 0; kind < 2; ++kind) {
        cudaGraph_t gi; CHECK(cudaGraphCreate(&gi, 0));
        cudaGraphConditionalHandle hi; CHECK(cudaGraphConditionalHandleCreate(&hi, gi, 0, 0));
        cudaGraphNodeParams kp = {cudaGraphNodeTypeKernel};
        void* dargs[] = {&v, &hi};
        kp.kernel.func = (void*)decide; kp.kernel.gridDim = dim3(1); kp.kernel.blockDim = dim3(1);
        kp.kernel.kernelParams = dargs;
        cudaGraphNode_t kn; CHECK(cudaGraphAddNode(&kn, gi, nullptr, nullptr, 0, &kp));
        cudaGraphNodeParams ip = {cudaGraphNodeTypeConditional};
        ip.conditional.handle = hi; ip.conditional.type = kind == 0 ? cudaGraphCondTypeIf : cudaGraphCondTypeSwitch;
        ip.conditional.size = kind == 0 ? 2 : 3;
        cudaGraphNode_t cn; CHECK(cudaGraphAddNode(&cn, gi, &kn, nullptr, 1, &ip));
        for (unsigned b = 0; b < ip.conditional.size; ++b) {
            int k = kind * 8 + b; void* margs[] = {&out, &k};
            cudaGraphNodeParams mp = {cudaGraphNodeTypeKernel};
            mp.kernel.func = (void*)mark; mp.kernel.gridDim = dim3(1); mp.kernel.blockDim = dim3(1);
            mp.kernel.kernelParams = margs;
            cudaGraphNode_t bn; CHECK(cudaGraphAddNode(&bn, ip.conditional.phGraph_out[b], nullptr, nullptr, 0, &mp));
        }
        cudaGraphExec_t ei; CHECK(cudaGraphInstantiate(&ei, gi, 0));
        for (int val = 0; val < 4; ++val) { *v = val; CHECK(cudaGraphLaunch(ei, 0)); }
        CHECK(cudaDeviceSynchronize());
    }
    printf("if %d %d switch %d %d %d\n", out[0], out[1], out[8], out[9], out[10]);
    printf("done\n");
    return 0;
}
"""


def test_conditional_nodes(cpu_session_home, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    res = cpu.run_program(CONDITIONAL, filename="cond.cu", timeout=120)
    assert res.returncode == 0 and "done" in res.stdout, res.stdout + res.stderr
    out = res.stdout
    assert "while 5 10 50\n" in out              # the body ran 5 times, stopped by cudaGraphSetConditional
    assert "while-again 11\n" in out
    # if: values 1, 2, 3 take body 0, value 0 the else body; switch: 0, 1, 2 each once, 3 none
    assert "if 3 1 switch 1 1 1\n" in out


def test_graph_api_without_kernel_nodes_needs_no_registry():
    # A file that only captures (no kernel nodes by address) still builds: the registry is optional.
    src = ("__global__ void k(int* a) { a[threadIdx.x] = 7; }\nint main() { int* a; cudaMallocManaged(&a, 64);\n"
           "cudaStream_t s; cudaStreamCreate(&s); cudaGraph_t g;\n"
           "cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n"
           "k<<<1, 16, 0, s>>>(a); cudaStreamEndCapture(s, &g); cudaGraphExec_t e; cudaGraphInstantiate(&e, g, 0);\n"
           'cudaGraphLaunch(e, s); cudaStreamSynchronize(s); printf("%d\\n", a[15]); return 0; }\n')
    res = cpu.run_program("#include <cstdio>\n" + src)
    assert res.ok and res.stdout == "7\n", res.stderr
