// veriforge CPU runtime: CUDA graphs and stream capture (CUDA 12/13 runtime API).
//
// A graph is a list of nodes with dependency edges; cudaGraphInstantiate clones it into an
// executable graph with a topological order, and cudaGraphLaunch runs the nodes in that order on
// the calling thread (streams are synchronous in this runtime, so a graph launch completes before
// it returns - a valid schedule of any graph). Kernel nodes own copies of their arguments (a
// DeferredLaunch, vf_graphs.h); explicit kernel nodes find the kernel's parameter types through
// the registry the front end fills for files that use kernel nodes or cudaLaunchKernel.
//
// Stream capture: while a stream captures, the operations issued into it (kernel launches,
// cudaMemcpyAsync / cudaMemsetAsync and their 2D/3D/symbol forms, cudaLaunchHostFunc,
// cudaMallocAsync / cudaFreeAsync, cudaGraphLaunch) become nodes whose dependencies are the
// stream's current capture dependencies. cudaEventRecord in a capturing stream makes the event
// stand for those nodes; cudaStreamWaitEvent on such an event makes another stream join the
// capture (fork) or merges the event's nodes into its dependencies (join), as CUDA does.
// In cudaStreamCaptureModeGlobal / ThreadLocal, "unsafe" calls (cudaMalloc, cudaDeviceSynchronize,
// synchronising or querying a capturing stream) fail with cudaErrorStreamCaptureUnsupported and
// invalidate the capture, unless the calling thread switched to relaxed mode
// (cudaThreadExchangeStreamCaptureMode).
//
// Graph memory: a memory-allocation node reserves its address when it is created (so the address
// is known while building the graph, as on a GPU); the memory counts as used by graphs from the
// first time the node runs until cudaDeviceGraphMemTrim after it was freed (by a free node,
// cudaFree or cudaFreeAsync). An allocation node whose dependencies include the free nodes of every
// earlier user of an address of sufficient size reuses that address, as CUDA does.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "vf_core.h"
#include "vf_launch.h"

namespace vf {
int submit_device_launch(DeferredLaunch* launch, cudaStream_t stream);  // device_launch.cpp

namespace {
// ---- kernels by address (explicit kernel nodes) ---------------------------------------------------
struct Deferrer {
    const char* name;
    ArgsDeferrer make;
};
std::map<const void*, Deferrer>& deferrers() {
    static auto* m = new std::map<const void*, Deferrer>();  // filled during static initialisation
    return *m;
}
}  // namespace

void register_deferrer(const void* fn, const char* name, ArgsDeferrer make) { deferrers()[fn] = Deferrer{name, make}; }

bool find_deferrer(const void* fn, const char** name, ArgsDeferrer* make) {
    auto it = deferrers().find(fn);
    if (it == deferrers().end()) return false;
    *name = it->second.name;
    *make = it->second.make;
    return true;
}

const void* find_kernel_by_name(const char* name) {
    if (!name) return nullptr;
    for (const auto& [fn, d] : deferrers())
        if (strcmp(d.name, name) == 0) return fn;
    return nullptr;
}
}  // namespace vf

#if defined(VF_HAVE_CUDA_HEADERS)

struct CUgraph_st;
struct CUgraphNode_st;

namespace {

using Node = CUgraphNode_st;
using Graph = CUgraph_st;

std::recursive_mutex g_m;  // graphs, captures, graph memory (never held while nodes run)

// ---- conditional handles --------------------------------------------------------------------------
struct CondState {
    std::atomic<unsigned> value{0};
    unsigned dflt = 0;
    bool assign_default = false;
};

// ---- graph memory -----------------------------------------------------------------------------
struct Backing {  // the memory behind one graph-allocation address
    void* ptr = nullptr;
    size_t size = 0;
    int node_refs = 0;  // allocation nodes (in graphs and executable graphs) using this address
    bool live = false;  // allocated by a node that ran, not freed yet
};
std::map<const void*, Backing*> g_backings;
std::atomic<int> g_nbackings{0};
uint64_t g_graph_live = 0, g_graph_phys = 0, g_graph_phys_high = 0, g_graph_live_high = 0;

Backing* new_backing(size_t size) {
    void* p = nullptr;
    if (posix_memalign(&p, 256, size ? size : 1) != 0) return nullptr;
    Backing* b = new Backing();
    b->ptr = p;
    b->size = size;
    g_backings[p] = b;
    g_nbackings.fetch_add(1);
    return b;
}
void maybe_release(Backing* b) {
    if (b->node_refs > 0 || b->live) return;
    g_backings.erase(b->ptr);
    g_nbackings.fetch_sub(1);
    free(b->ptr);
    delete b;
}
Backing* backing_of(const void* p) {
    auto it = g_backings.find(p);
    return it == g_backings.end() ? nullptr : it->second;
}
void mark_allocated(Backing* b) {
    b->live = true;
    g_graph_live += b->size;
    g_graph_live_high = std::max(g_graph_live_high, g_graph_live);
    g_graph_phys = std::max(g_graph_phys, g_graph_live);  // physical memory is reused once freed
    g_graph_phys_high = std::max(g_graph_phys_high, g_graph_phys);
}
void mark_freed(Backing* b) {
    b->live = false;
    g_graph_live -= b->size;
}

}  // namespace

struct CUgraphNode_st {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    Graph* graph = nullptr;
    std::vector<Node*> deps;
    const Node* origin = nullptr;  // the node this one was cloned from
    unsigned index = 0;            // creation order within its graph
    bool enabled = true;
    // kernel
    std::unique_ptr<vf::DeferredLaunch> kernel;
    // memcpy
    cudaMemcpy3DParms copy{};
    bool copy_1d = false;
    void* dst = nullptr;
    const void* src = nullptr;
    size_t count = 0;
    cudaMemcpyKind kind = cudaMemcpyDefault;
    // memset
    cudaMemsetParams set{};
    // host
    cudaHostNodeParams host{};
    // child graph / conditional bodies (owned)
    Graph* child = nullptr;
    std::vector<Graph*> bodies;
    std::vector<cudaGraph_t> bodies_out;
    CondState* cond = nullptr;
    cudaGraphConditionalNodeType cond_type = cudaGraphCondTypeIf;
    // events
    cudaEvent_t event = nullptr;
    // memory
    Backing* backing = nullptr;
    cudaMemAllocNodeParams alloc{};
    void* free_ptr = nullptr;

    ~CUgraphNode_st();
};

struct CUgraph_st {
    std::vector<std::unique_ptr<Node>> nodes;
    std::vector<CondState*> handles;  // created for this graph
    unsigned next_index = 0;
};

struct CUgraphExec_st {
    Graph* graph = nullptr;  // an owned clone
    std::map<const Node*, Node*> nodes;  // user-visible node (of the graph it was made from) -> ours
    std::vector<Node*> order;
    unsigned long long flags = 0;
    ~CUgraphExec_st();
};

namespace {
void destroy_graph(Graph* g) { delete g; }
}  // namespace

CUgraphNode_st::~CUgraphNode_st() {
    delete child;
    for (Graph* b : bodies) delete b;
    if (backing) {
        backing->node_refs--;
        maybe_release(backing);
    }
}
CUgraphExec_st::~CUgraphExec_st() { delete graph; }

namespace {

std::vector<std::unique_ptr<CondState>> g_handles;  // live for the process (kernels hold their values)

Node* add_node(Graph* g, cudaGraphNodeType type, const cudaGraphNode_t* deps, size_t ndeps) {
    auto n = std::make_unique<Node>();
    n->type = type;
    n->graph = g;
    n->index = g->next_index++;
    for (size_t i = 0; i < ndeps; ++i)
        if (deps[i] && std::find(n->deps.begin(), n->deps.end(), deps[i]) == n->deps.end()) n->deps.push_back(deps[i]);
    Node* raw = n.get();
    g->nodes.push_back(std::move(n));
    return raw;
}

bool deps_valid(Graph* g, const cudaGraphNode_t* deps, size_t ndeps) {
    if (ndeps && !deps) return false;
    for (size_t i = 0; i < ndeps; ++i)
        if (!deps[i] || deps[i]->graph != g) return false;
    return true;
}

Graph* clone_graph(const Graph* from, std::map<const Node*, Node*>* mapping);

void copy_node_params(Node* to, const Node* from) {
    to->type = from->type;
    to->enabled = from->enabled;
    to->kernel.reset(from->kernel ? from->kernel->clone() : nullptr);
    to->copy = from->copy;
    to->copy_1d = from->copy_1d;
    to->dst = from->dst;
    to->src = from->src;
    to->count = from->count;
    to->kind = from->kind;
    to->set = from->set;
    to->host = from->host;
    to->cond = from->cond;
    to->cond_type = from->cond_type;
    to->event = from->event;
    to->alloc = from->alloc;
    to->free_ptr = from->free_ptr;
}

Graph* clone_graph(const Graph* from, std::map<const Node*, Node*>* mapping) {
    Graph* g = new Graph();
    g->handles = from->handles;
    g->next_index = from->next_index;
    std::map<const Node*, Node*> local;
    std::map<const Node*, Node*>& map = mapping ? *mapping : local;
    for (const auto& n : from->nodes) {
        auto c = std::make_unique<Node>();
        copy_node_params(c.get(), n.get());
        c->graph = g;
        c->index = n->index;
        c->origin = n.get();
        if (n->child) c->child = clone_graph(n->child, nullptr);
        for (Graph* b : n->bodies) {
            c->bodies.push_back(clone_graph(b, nullptr));
            c->bodies_out.push_back(c->bodies.back());
        }
        if (n->backing) {
            c->backing = n->backing;
            c->backing->node_refs++;
        }
        map[n.get()] = c.get();
        g->nodes.push_back(std::move(c));
    }
    for (const auto& n : from->nodes)
        for (Node* d : n->deps) map[n.get()]->deps.push_back(map[d]);
    return g;
}

// Kahn's algorithm, ties broken by creation order. False on a cycle.
bool topo_order(const Graph* g, std::vector<Node*>& order) {
    order.clear();
    std::map<const Node*, size_t> indeg;
    std::map<const Node*, std::vector<Node*>> out;
    for (const auto& n : g->nodes) {
        indeg[n.get()] += 0;
        for (Node* d : n->deps) {
            indeg[n.get()]++;
            out[d].push_back(n.get());
        }
    }
    std::set<std::pair<unsigned, Node*>> ready;
    for (const auto& n : g->nodes)
        if (indeg[n.get()] == 0) ready.insert({n->index, n.get()});
    while (!ready.empty()) {
        Node* n = ready.begin()->second;
        ready.erase(ready.begin());
        order.push_back(n);
        for (Node* m : out[n])
            if (--indeg[m] == 0) ready.insert({m->index, m});
    }
    return order.size() == g->nodes.size();
}

// ---- running nodes ----------------------------------------------------------------------------
int run_graph(const Graph* g, cudaStream_t stream, const std::vector<Node*>* precomputed);

int memset_node(const cudaMemsetParams& p) {
    if (!p.dst || (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4)) return cudaErrorInvalidValue;
    size_t row = p.width * p.elementSize;
    size_t pitch = p.height > 1 ? p.pitch : row;
    unsigned char pattern[4];
    for (unsigned i = 0; i < p.elementSize; ++i) pattern[i] = (unsigned char)(p.value >> (8 * i));
    bool bytewise = true;
    for (unsigned i = 1; i < p.elementSize; ++i) bytewise = bytewise && pattern[i] == pattern[0];
    if (bytewise) return cudaMemset2D(p.dst, pitch, pattern[0], row, p.height ? p.height : 1);
    std::vector<unsigned char> buf(row);
    for (size_t i = 0; i < row; ++i) buf[i] = pattern[i % p.elementSize];
    return cudaMemcpy2D(p.dst, pitch, buf.data(), row, row, p.height ? p.height : 1, cudaMemcpyHostToDevice);
}

int run_node(Node* n, cudaStream_t stream) {
    switch (n->type) {
        case cudaGraphNodeTypeKernel:
            return vf::host_launch(n->kernel->spec, stream);
        case cudaGraphNodeTypeMemcpy:
            return n->copy_1d ? cudaMemcpy(n->dst, n->src, n->count, n->kind) : cudaMemcpy3D(&n->copy);
        case cudaGraphNodeTypeMemset:
            return memset_node(n->set);
        case cudaGraphNodeTypeHost:
            return cudaLaunchHostFunc(0, n->host.fn, n->host.userData);
        case cudaGraphNodeTypeGraph:
            return run_graph(n->child, stream, nullptr);
        case cudaGraphNodeTypeEventRecord:
            return cudaEventRecord(n->event, 0);
        case cudaGraphNodeTypeEmpty:
        case cudaGraphNodeTypeWaitEvent:
            return cudaSuccess;
        case cudaGraphNodeTypeMemAlloc: {
            std::lock_guard<std::recursive_mutex> lock(g_m);
            if (n->backing->live) {
                fprintf(stderr, "veriforge: cudaGraphLaunch: the graph allocation at %p (%zu bytes) is still allocated "
                        "from an earlier launch; free it before relaunching (or instantiate with "
                        "cudaGraphInstantiateFlagAutoFreeOnLaunch)\n", n->backing->ptr, n->backing->size);
                return cudaErrorInvalidValue;
            }
            mark_allocated(n->backing);
            return cudaSuccess;
        }
        case cudaGraphNodeTypeMemFree: {
            std::unique_lock<std::recursive_mutex> lock(g_m);
            if (Backing* b = backing_of(n->free_ptr)) {
                if (!b->live) return cudaErrorInvalidValue;
                mark_freed(b);
                maybe_release(b);
                return cudaSuccess;
            }
            lock.unlock();
            return cudaFree(n->free_ptr);  // stream-ordered memory from outside the graph
        }
        case cudaGraphNodeTypeConditional: {
            CondState* c = n->cond;
            if (!c) return cudaErrorInvalidValue;
            if (n->cond_type == cudaGraphCondTypeIf) {
                unsigned v = c->value.load();
                if (v) return run_graph(n->bodies[0], stream, nullptr);
                return n->bodies.size() > 1 ? run_graph(n->bodies[1], stream, nullptr) : cudaSuccess;
            }
            if (n->cond_type == cudaGraphCondTypeWhile) {
                while (c->value.load())
                    if (int e = run_graph(n->bodies[0], stream, nullptr)) return e;
                return cudaSuccess;
            }
            unsigned v = c->value.load();  // switch
            return v < n->bodies.size() ? run_graph(n->bodies[v], stream, nullptr) : cudaSuccess;
        }
        default:
            return cudaErrorNotSupported;
    }
}

int run_graph(const Graph* g, cudaStream_t stream, const std::vector<Node*>* precomputed) {
    std::vector<Node*> order;
    if (!precomputed) {
        if (!topo_order(g, order)) return cudaErrorInvalidValue;
        precomputed = &order;
    }
    for (Node* n : *precomputed) {
        if (!n->enabled) continue;
        if (int e = run_node(n, stream)) return e;
    }
    return cudaSuccess;
}

void collect_handles(const Graph* g, std::set<CondState*>& out) {
    for (CondState* h : g->handles) out.insert(h);
    for (const auto& n : g->nodes) {
        if (n->cond) out.insert(n->cond);
        if (n->child) collect_handles(n->child, out);
        for (Graph* b : n->bodies) collect_handles(b, out);
    }
}

void collect_allocs(const Graph* g, std::vector<Backing*>& out) {
    for (const auto& n : g->nodes) {
        if (n->type == cudaGraphNodeTypeMemAlloc && n->backing) out.push_back(n->backing);
        if (n->child) collect_allocs(n->child, out);
        for (Graph* b : n->bodies) collect_allocs(b, out);
    }
}

// ---- stream capture -----------------------------------------------------------------------------
struct Capture {
    Graph* graph = nullptr;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
    std::thread::id thread;
    unsigned long long id = 0;
    bool invalidated = false;
    cudaStream_t origin = nullptr;
};
struct CapturingStream {
    Capture* cap;
    std::vector<Node*> deps;
};
struct CapturedEvent {
    Capture* cap;
    std::vector<Node*> nodes;
};
std::map<cudaStream_t, CapturingStream> g_streams;
std::map<cudaEvent_t, CapturedEvent> g_events;
std::vector<Capture*> g_captures;
std::atomic<int> g_ncaptures{0};
std::atomic<unsigned long long> g_capture_ids{1};
thread_local cudaStreamCaptureMode tl_mode = cudaStreamCaptureModeGlobal;

inline bool legacy(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy; }

CapturingStream* capturing(cudaStream_t s) {  // caller holds g_m
    auto it = g_streams.find(s);
    return it == g_streams.end() ? nullptr : &it->second;
}

// Adds a node at the end of the capturing stream: its dependencies are the stream's, and it
// becomes the stream's only dependency.
Node* capture_node(CapturingStream* cs, cudaGraphNodeType type) {
    Node* n = add_node(cs->cap->graph, type, cs->deps.data(), cs->deps.size());
    cs->deps.assign(1, n);
    return n;
}

void end_capture(Capture* cap) {  // caller holds g_m
    for (auto it = g_streams.begin(); it != g_streams.end();)
        it = it->second.cap == cap ? g_streams.erase(it) : std::next(it);
    for (auto it = g_events.begin(); it != g_events.end();)
        it = it->second.cap == cap ? g_events.erase(it) : std::next(it);
    g_captures.erase(std::remove(g_captures.begin(), g_captures.end(), cap), g_captures.end());
    g_ncaptures.fetch_sub(1);
}

}  // namespace

// ---- hooks called by host_api.cpp and the launch templates ------------------------------------------
namespace vf {

bool capture_launch_is_deferred(cudaStream_t stream) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return false;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return capturing(stream) != nullptr;
}

int capture_kernel(DeferredLaunch* launch, cudaStream_t stream) {
    std::unique_ptr<DeferredLaunch> owned(launch);
    const char* why = "";
    if (int err = check_launch_config(launch->spec.grid, launch->spec.block, launch->spec.shared_bytes, &why)) {
        fprintf(stderr, "veriforge: kernel '%s': invalid launch configuration: %s\n", launch->spec.kernel_name, why);
        return err;
    }
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(stream);
    if (!cs) return host_launch(owned->spec, stream);  // the capture ended meanwhile (another thread)
    if (cs->cap->invalidated) return cudaErrorStreamCaptureInvalidated;
    if (!launch->func) launch->func = find_kernel_by_name(launch->spec.kernel_name);
    Node* n = capture_node(cs, cudaGraphNodeTypeKernel);
    n->kernel = std::move(owned);
    return cudaSuccess;
}

// Each returns -1 when the stream is not capturing (the caller proceeds as usual), else the result.
int capture_memcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t s) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(s);
    if (!cs) return -1;
    if ((int)kind < 0 || (int)kind > 4) return cudaErrorInvalidMemcpyDirection;
    if (count && (!dst || !src)) return cudaErrorInvalidValue;
    Node* n = capture_node(cs, cudaGraphNodeTypeMemcpy);
    n->copy_1d = true;
    n->dst = dst;
    n->src = src;
    n->count = count;
    n->kind = kind;
    return cudaSuccess;
}

int capture_memcpy3d(const cudaMemcpy3DParms* p, cudaStream_t s) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(s);
    if (!cs) return -1;
    if (!p) return cudaErrorInvalidValue;
    Node* n = capture_node(cs, cudaGraphNodeTypeMemcpy);
    n->copy = *p;
    return cudaSuccess;
}

int capture_memset(void* ptr, size_t pitch, int value, size_t width, size_t height, cudaStream_t s) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(s);
    if (!cs) return -1;
    if (width && !ptr) return cudaErrorInvalidValue;
    Node* n = capture_node(cs, cudaGraphNodeTypeMemset);
    n->set.dst = ptr;
    n->set.pitch = pitch;
    n->set.value = (unsigned char)value;
    n->set.elementSize = 1;
    n->set.width = width;
    n->set.height = height;
    return cudaSuccess;
}

int capture_host_func(cudaHostFn_t fn, void* data, cudaStream_t s) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(s);
    if (!cs) return -1;
    if (!fn) return cudaErrorInvalidValue;
    Node* n = capture_node(cs, cudaGraphNodeTypeHost);
    n->host.fn = fn;
    n->host.userData = data;
    return cudaSuccess;
}

// Recording an event into a capturing stream makes it stand for the stream's capture
// dependencies; recording it anywhere else forgets that.
int capture_event_record(cudaEvent_t e, cudaStream_t s) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(s);
    if (!cs) {
        g_events.erase(e);
        return -1;
    }
    if (!e) return cudaErrorInvalidResourceHandle;
    g_events[e] = CapturedEvent{cs->cap, cs->deps};
    return cudaSuccess;
}

int capture_wait_event(cudaStream_t s, cudaEvent_t e) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    auto ev = g_events.find(e);
    CapturingStream* cs = capturing(s);
    if (ev == g_events.end()) return cs ? (int)cudaSuccess : -1;  // an event outside the capture: complete
    if (legacy(s)) return cudaErrorStreamCaptureImplicit;
    if (!cs) {  // fork: the stream joins the capture
        g_streams[s] = CapturingStream{ev->second.cap, ev->second.nodes};
        return cudaSuccess;
    }
    if (cs->cap != ev->second.cap) {  // merging two captures
        cs->cap->invalidated = true;
        ev->second.cap->invalidated = true;
        return cudaErrorStreamCaptureIsolation;
    }
    for (Node* n : ev->second.nodes)  // join
        if (std::find(cs->deps.begin(), cs->deps.end(), n) == cs->deps.end()) cs->deps.push_back(n);
    return cudaSuccess;
}

int capture_malloc(void** ptr, size_t size, cudaStream_t s) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(s);
    if (!cs) return -1;
    if (!ptr) return cudaErrorInvalidValue;
    Backing* b = new_backing(size);
    if (!b) return cudaErrorMemoryAllocation;
    Node* n = capture_node(cs, cudaGraphNodeTypeMemAlloc);
    n->backing = b;
    b->node_refs++;
    n->alloc.bytesize = size;
    n->alloc.dptr = b->ptr;
    n->alloc.poolProps.allocType = cudaMemAllocationTypePinned;
    n->alloc.poolProps.location.type = cudaMemLocationTypeDevice;
    *ptr = b->ptr;
    return cudaSuccess;
}

int capture_free(void* ptr, cudaStream_t s) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(s);
    if (!cs) return -1;
    if (!ptr) return cudaErrorInvalidValue;
    Node* n = capture_node(cs, cudaGraphNodeTypeMemFree);
    n->free_ptr = ptr;
    return cudaSuccess;
}

// An operation that cannot be captured (synchronising or querying a capturing stream, a stream
// callback): invalidates the capture.
int capture_unsupported(cudaStream_t s) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(s);
    if (!cs) return -1;
    cs->cap->invalidated = true;
    return cudaErrorStreamCaptureUnsupported;
}

// A potentially unsafe call (cudaMalloc, cudaDeviceSynchronize) while captures are active: refused
// as CUDA refuses it in global / thread-local mode, unless this thread is in relaxed mode.
int capture_forbids_sync() {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0 || tl_mode == cudaStreamCaptureModeRelaxed) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    std::thread::id me = std::this_thread::get_id();
    bool refused = false;
    for (Capture* c : g_captures) {
        bool mine = c->thread == me;
        if ((mine && c->mode != cudaStreamCaptureModeRelaxed) || (!mine && c->mode == cudaStreamCaptureModeGlobal)) {
            c->invalidated = true;
            refused = true;
        }
    }
    return refused ? (int)cudaErrorStreamCaptureUnsupported : -1;
}

void capture_forget_stream(cudaStream_t s) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    auto it = g_streams.find(s);
    if (it != g_streams.end() && it->second.cap->origin != s) g_streams.erase(it);
}

void capture_forget_event(cudaEvent_t e) {
    if (g_ncaptures.load(std::memory_order_relaxed) == 0) return;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    g_events.erase(e);
}

// cudaFree / cudaFreeAsync of a graph allocation: -1 when `ptr` is not one.
int graph_mem_free(void* ptr) {
    if (g_nbackings.load(std::memory_order_relaxed) == 0) return -1;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Backing* b = backing_of(ptr);
    if (!b) return -1;
    if (!b->live) return cudaErrorInvalidValue;
    mark_freed(b);
    maybe_release(b);
    return cudaSuccess;
}

}  // namespace vf

// ---- the API ------------------------------------------------------------------------------------
extern "C" {

void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value) {
    if (handle) reinterpret_cast<CondState*>(handle)->value.store(value);
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                          const cudaGraphEdgeData*, size_t ndeps, enum cudaStreamCaptureMode mode) {
    if (!graph || !deps_valid(graph, deps, ndeps) || (int)mode < 0 || (int)mode > 2) return cudaErrorInvalidValue;
    if (legacy(stream)) return cudaErrorStreamCaptureUnsupported;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    if (capturing(stream)) return cudaErrorIllegalState;
    Capture* cap = new Capture();
    cap->graph = graph;
    cap->mode = mode;
    cap->thread = std::this_thread::get_id();
    cap->id = g_capture_ids.fetch_add(1);
    cap->origin = stream;
    g_captures.push_back(cap);
    g_streams[stream] = CapturingStream{cap, std::vector<Node*>(deps, deps + ndeps)};
    g_ncaptures.fetch_add(1);
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
    if (legacy(stream)) return cudaErrorStreamCaptureUnsupported;
    if ((int)mode < 0 || (int)mode > 2) return cudaErrorInvalidValue;
    Graph* g = new Graph();
    cudaError_t e = cudaStreamBeginCaptureToGraph(stream, g, nullptr, nullptr, 0, mode);
    if (e != cudaSuccess) delete g;
    return e;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(stream);
    if (!cs) return cudaErrorIllegalState;
    Capture* cap = cs->cap;
    if (cap->origin != stream) return cudaErrorStreamCaptureUnmatched;
    if (cap->mode != cudaStreamCaptureModeRelaxed && cap->thread != std::this_thread::get_id())
        return cudaErrorStreamCaptureWrongThread;
    bool invalid = cap->invalidated;
    Graph* g = cap->graph;
    end_capture(cap);
    delete cap;
    if (invalid) {
        if (pGraph) *pGraph = nullptr;
        return cudaErrorStreamCaptureInvalidated;
    }
    if (pGraph) *pGraph = g;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
    if (!status) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(stream);
    *status = !cs ? cudaStreamCaptureStatusNone
                  : cs->cap->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus* status,
                                     unsigned long long* id, cudaGraph_t* graph, const cudaGraphNode_t** deps,
                                     const cudaGraphEdgeData** edge_data, size_t* ndeps) {
    if (!status) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(stream);
    if (!cs) {
        *status = cudaStreamCaptureStatusNone;
        return cudaSuccess;
    }
    *status = cs->cap->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    if (id) *id = cs->cap->id;
    if (graph) *graph = cs->cap->graph;
    if (deps) *deps = cs->deps.empty() ? nullptr : cs->deps.data();
    if (edge_data) *edge_data = nullptr;  // every edge is a default one
    if (ndeps) *ndeps = cs->deps.size();
    return cudaSuccess;
}

cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* deps, const cudaGraphEdgeData*,
                                                size_t ndeps, unsigned int flags) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    CapturingStream* cs = capturing(stream);
    if (!cs) return cudaErrorIllegalState;
    if (flags > 1 || !deps_valid(cs->cap->graph, deps, ndeps)) return cudaErrorInvalidValue;
    if (flags == cudaStreamSetCaptureDependencies) cs->deps.clear();
    for (size_t i = 0; i < ndeps; ++i)
        if (std::find(cs->deps.begin(), cs->deps.end(), deps[i]) == cs->deps.end()) cs->deps.push_back(deps[i]);
    return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
    if (!mode || (int)*mode < 0 || (int)*mode > 2) return cudaErrorInvalidValue;
    std::swap(*mode, tl_mode);
    return cudaSuccess;
}

// ---- graphs and nodes ---------------------------------------------------------------------------
cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
    if (!pGraph || flags) return cudaErrorInvalidValue;
    *pGraph = new Graph();
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    if (!graph) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    destroy_graph(graph);
    return cudaSuccess;
}

cudaError_t cudaGraphClone(cudaGraph_t* pClone, cudaGraph_t graph) {
    if (!pClone || !graph) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    *pClone = clone_graph(graph, nullptr);
    return cudaSuccess;
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* pNode, cudaGraphNode_t original, cudaGraph_t clone) {
    if (!pNode || !original || !clone) return cudaErrorInvalidValue;
    for (const auto& n : clone->nodes)
        if (n->origin == original) {
            *pNode = n.get();
            return cudaSuccess;
        }
    return cudaErrorInvalidValue;
}

// Kernel nodes: the kernel's parameter types come from the registry (vf_launch.h ArgsLaunchRegistrar).
static cudaError_t make_kernel(const cudaKernelNodeParams* p, std::unique_ptr<vf::DeferredLaunch>& out) {
    if (!p || !p->func) return cudaErrorInvalidValue;
    if (p->extra) {
        fprintf(stderr, "veriforge: kernel node: arguments in the 'extra' format are not supported by the CPU "
                "runtime (use kernelParams)\n");
        return cudaErrorNotSupported;
    }
    const char* name = nullptr;
    vf::ArgsDeferrer make = nullptr;
    if (!vf::find_deferrer(p->func, &name, &make)) {
        fprintf(stderr, "veriforge: kernel node: %p is not a kernel of this program (the CPU runtime finds the "
                "non-template __global__ functions of files that use kernel nodes or cudaLaunchKernel by address)\n",
                p->func);
        return cudaErrorInvalidDeviceFunction;
    }
    const char* why = "";
    if (int err = vf::check_launch_config(p->gridDim, p->blockDim, p->sharedMemBytes, &why)) {
        fprintf(stderr, "veriforge: kernel node '%s': invalid launch configuration: %s\n", name, why);
        return (cudaError_t)err;
    }
    vf::DeferredLaunch* d = make(p->func, name, p->gridDim, p->blockDim, p->kernelParams, p->sharedMemBytes);
    if (!d) return cudaErrorInvalidValue;
    out.reset(d);
    return cudaSuccess;
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                   size_t ndeps, const struct cudaKernelNodeParams* params) {
    if (!pNode || !graph || !deps_valid(graph, deps, ndeps)) return cudaErrorInvalidValue;
    std::unique_ptr<vf::DeferredLaunch> k;
    if (cudaError_t e = make_kernel(params, k)) return e;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = add_node(graph, cudaGraphNodeTypeKernel, deps, ndeps);
    n->kernel = std::move(k);
    *pNode = n;
    return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams* p) {
    if (!node || !p || node->type != cudaGraphNodeTypeKernel) return cudaErrorInvalidValue;
    vf::DeferredLaunch* k = node->kernel.get();
    p->func = const_cast<void*>(k->func);
    p->gridDim = k->spec.grid;
    p->blockDim = k->spec.block;
    p->sharedMemBytes = (unsigned)k->spec.shared_bytes;
    p->kernelParams = k->arg_ptrs.empty() ? nullptr : k->arg_ptrs.data();
    p->extra = nullptr;
    return cudaSuccess;
}

static cudaError_t set_kernel(Node* node, const cudaKernelNodeParams* p) {
    if (!node || !p || node->type != cudaGraphNodeTypeKernel) return cudaErrorInvalidValue;
    vf::DeferredLaunch* k = node->kernel.get();
    if (p->func && p->func != k->func) {  // another kernel: a new node body
        std::unique_ptr<vf::DeferredLaunch> fresh;
        if (cudaError_t e = make_kernel(p, fresh)) return e;
        node->kernel = std::move(fresh);
        return cudaSuccess;
    }
    const char* why = "";
    if (int err = vf::check_launch_config(p->gridDim, p->blockDim, p->sharedMemBytes, &why)) return (cudaError_t)err;
    if (!k->arg_ptrs.empty()) {
        if (!p->kernelParams) return cudaErrorInvalidValue;
        if (p->kernelParams != k->arg_ptrs.data()) k->set_args(p->kernelParams);
    }
    k->spec.grid = p->gridDim;
    k->spec.block = p->blockDim;
    k->spec.shared_bytes = p->sharedMemBytes;
    return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const struct cudaKernelNodeParams* p) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return set_kernel(node, p);
}

static bool check_copy(const cudaMemcpy3DParms* p) {
    return p && !p->srcArray && !p->dstArray && p->srcPtr.ptr && p->dstPtr.ptr;
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                   size_t ndeps, const struct cudaMemcpy3DParms* p) {
    if (!pNode || !graph || !deps_valid(graph, deps, ndeps) || !p) return cudaErrorInvalidValue;
    if (p->srcArray || p->dstArray) return cudaErrorNotSupported;  // CUDA arrays (textures)
    if (!check_copy(p)) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = add_node(graph, cudaGraphNodeTypeMemcpy, deps, ndeps);
    n->copy = *p;
    *pNode = n;
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                     size_t ndeps, void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
    if (!pNode || !graph || !deps_valid(graph, deps, ndeps) || (count && (!dst || !src))) return cudaErrorInvalidValue;
    if ((int)kind < 0 || (int)kind > 4) return cudaErrorInvalidMemcpyDirection;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = add_node(graph, cudaGraphNodeTypeMemcpy, deps, ndeps);
    n->copy_1d = true;
    n->dst = dst;
    n->src = src;
    n->count = count;
    n->kind = kind;
    *pNode = n;
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                           size_t ndeps, const void* symbol, const void* src, size_t count,
                                           size_t offset, enum cudaMemcpyKind kind) {
    if (!symbol) return cudaErrorInvalidSymbol;
    return cudaGraphAddMemcpyNode1D(pNode, graph, deps, ndeps, const_cast<char*>(static_cast<const char*>(symbol)) + offset,
                                    src, count, kind);
}

cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                             size_t ndeps, void* dst, const void* symbol, size_t count, size_t offset,
                                             enum cudaMemcpyKind kind) {
    if (!symbol) return cudaErrorInvalidSymbol;
    return cudaGraphAddMemcpyNode1D(pNode, graph, deps, ndeps, dst, static_cast<const char*>(symbol) + offset, count,
                                    kind);
}

static cudaError_t get_copy(const Node* node, cudaMemcpy3DParms* p) {
    if (!node || !p || node->type != cudaGraphNodeTypeMemcpy) return cudaErrorInvalidValue;
    if (!node->copy_1d) {
        *p = node->copy;
        return cudaSuccess;
    }
    memset(p, 0, sizeof *p);
    p->srcPtr = make_cudaPitchedPtr(const_cast<void*>(node->src), node->count, node->count, 1);
    p->dstPtr = make_cudaPitchedPtr(node->dst, node->count, node->count, 1);
    p->extent = make_cudaExtent(node->count, 1, 1);
    p->kind = node->kind;
    return cudaSuccess;
}

static cudaError_t set_copy(Node* node, const cudaMemcpy3DParms* p) {
    if (!node || node->type != cudaGraphNodeTypeMemcpy || !check_copy(p)) return cudaErrorInvalidValue;
    node->copy = *p;
    node->copy_1d = false;
    return cudaSuccess;
}

static cudaError_t set_copy_1d(Node* node, void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
    if (!node || node->type != cudaGraphNodeTypeMemcpy || (count && (!dst || !src))) return cudaErrorInvalidValue;
    node->copy_1d = true;
    node->dst = dst;
    node->src = src;
    node->count = count;
    node->kind = kind;
    return cudaSuccess;
}

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, struct cudaMemcpy3DParms* p) { return get_copy(node, p); }
cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const struct cudaMemcpy3DParms* p) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return set_copy(node, p);
}
cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src, size_t count,
                                           enum cudaMemcpyKind kind) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return set_copy_1d(node, dst, src, count, kind);
}

static bool check_set(const cudaMemsetParams* p) {
    return p && p->dst && (p->elementSize == 1 || p->elementSize == 2 || p->elementSize == 4) &&
           (p->height <= 1 || p->pitch >= p->width * p->elementSize);
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                   size_t ndeps, const struct cudaMemsetParams* p) {
    if (!pNode || !graph || !deps_valid(graph, deps, ndeps) || !check_set(p)) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = add_node(graph, cudaGraphNodeTypeMemset, deps, ndeps);
    n->set = *p;
    *pNode = n;
    return cudaSuccess;
}
cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, struct cudaMemsetParams* p) {
    if (!node || !p || node->type != cudaGraphNodeTypeMemset) return cudaErrorInvalidValue;
    *p = node->set;
    return cudaSuccess;
}
cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const struct cudaMemsetParams* p) {
    if (!node || node->type != cudaGraphNodeTypeMemset || !check_set(p)) return cudaErrorInvalidValue;
    node->set = *p;
    return cudaSuccess;
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t ndeps,
                                 const struct cudaHostNodeParams* p) {
    if (!pNode || !graph || !deps_valid(graph, deps, ndeps) || !p || !p->fn) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = add_node(graph, cudaGraphNodeTypeHost, deps, ndeps);
    n->host = *p;
    *pNode = n;
    return cudaSuccess;
}
cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, struct cudaHostNodeParams* p) {
    if (!node || !p || node->type != cudaGraphNodeTypeHost) return cudaErrorInvalidValue;
    *p = node->host;
    return cudaSuccess;
}
cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const struct cudaHostNodeParams* p) {
    if (!node || !p || !p->fn || node->type != cudaGraphNodeTypeHost) return cudaErrorInvalidValue;
    node->host = *p;
    return cudaSuccess;
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                  size_t ndeps) {
    if (!pNode || !graph || !deps_valid(graph, deps, ndeps)) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    *pNode = add_node(graph, cudaGraphNodeTypeEmpty, deps, ndeps);
    return cudaSuccess;
}

static bool has_memory_nodes(const Graph* g) {
    for (const auto& n : g->nodes)
        if (n->type == cudaGraphNodeTypeMemAlloc || n->type == cudaGraphNodeTypeMemFree ||
            (n->child && has_memory_nodes(n->child)))
            return true;
    return false;
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                       size_t ndeps, cudaGraph_t child) {
    if (!pNode || !graph || !child || child == graph || !deps_valid(graph, deps, ndeps)) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    if (has_memory_nodes(child)) return cudaErrorNotSupported;  // CUDA: only when the child graph is moved
    Node* n = add_node(graph, cudaGraphNodeTypeGraph, deps, ndeps);
    n->child = clone_graph(child, nullptr);
    *pNode = n;
    return cudaSuccess;
}
cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* pGraph) {
    if (!node || !pGraph || node->type != cudaGraphNodeTypeGraph) return cudaErrorInvalidValue;
    *pGraph = node->child;
    return cudaSuccess;
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                        size_t ndeps, cudaEvent_t event) {
    if (!pNode || !graph || !event || !deps_valid(graph, deps, ndeps)) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = add_node(graph, cudaGraphNodeTypeEventRecord, deps, ndeps);
    n->event = event;
    *pNode = n;
    return cudaSuccess;
}
cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                      size_t ndeps, cudaEvent_t event) {
    if (!pNode || !graph || !event || !deps_valid(graph, deps, ndeps)) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = add_node(graph, cudaGraphNodeTypeWaitEvent, deps, ndeps);
    n->event = event;
    *pNode = n;
    return cudaSuccess;
}
cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* out) {
    if (!node || !out || node->type != cudaGraphNodeTypeEventRecord) return cudaErrorInvalidValue;
    *out = node->event;
    return cudaSuccess;
}
cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
    if (!node || !event || node->type != cudaGraphNodeTypeEventRecord) return cudaErrorInvalidValue;
    node->event = event;
    return cudaSuccess;
}
cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* out) {
    if (!node || !out || node->type != cudaGraphNodeTypeWaitEvent) return cudaErrorInvalidValue;
    *out = node->event;
    return cudaSuccess;
}
cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
    if (!node || !event || node->type != cudaGraphNodeTypeWaitEvent) return cudaErrorInvalidValue;
    node->event = event;
    return cudaSuccess;
}

// The nodes that must have run before `deps` run (the dependencies and everything before them).
static std::set<const Node*> ancestors(const cudaGraphNode_t* deps, size_t ndeps) {
    std::set<const Node*> seen;
    std::vector<const Node*> todo(deps, deps + ndeps);
    while (!todo.empty()) {
        const Node* n = todo.back();
        todo.pop_back();
        if (!seen.insert(n).second) continue;
        for (const Node* d : n->deps) todo.push_back(d);
    }
    return seen;
}

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                     size_t ndeps, struct cudaMemAllocNodeParams* p) {
    if (!pNode || !graph || !p || !p->bytesize || !deps_valid(graph, deps, ndeps)) return cudaErrorInvalidValue;
    if (p->poolProps.location.type == cudaMemLocationTypeDevice && p->poolProps.location.id != 0)
        return cudaErrorInvalidDevice;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    // Reuse an address of this graph whose every allocation is freed before this node runs.
    Backing* chosen = nullptr;
    std::set<const Node*> before = ancestors(deps, ndeps);
    std::map<Backing*, bool> usable;
    for (const auto& n : graph->nodes) {
        if (n->type != cudaGraphNodeTypeMemAlloc || !n->backing) continue;
        Backing* b = n->backing;
        bool freed_before = false;
        for (const Node* f : before)
            if (f->type == cudaGraphNodeTypeMemFree && f->free_ptr == b->ptr) freed_before = true;
        auto it = usable.find(b);
        usable[b] = (it == usable.end() ? true : it->second) && freed_before && b->size >= p->bytesize;
    }
    for (const auto& n : graph->nodes)  // in creation order: the first address that fits
        if (n->backing && usable[n->backing]) {
            chosen = n->backing;
            break;
        }
    if (!chosen) chosen = new_backing(p->bytesize);
    if (!chosen) return cudaErrorMemoryAllocation;
    Node* n = add_node(graph, cudaGraphNodeTypeMemAlloc, deps, ndeps);
    n->backing = chosen;
    chosen->node_refs++;
    p->dptr = chosen->ptr;
    n->alloc = *p;
    n->alloc.accessDescs = nullptr;
    n->alloc.accessDescCount = 0;
    *pNode = n;
    return cudaSuccess;
}

cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, struct cudaMemAllocNodeParams* out) {
    if (!node || !out || node->type != cudaGraphNodeTypeMemAlloc) return cudaErrorInvalidValue;
    *out = node->alloc;
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                    size_t ndeps, void* dptr) {
    if (!pNode || !graph || !dptr || !deps_valid(graph, deps, ndeps)) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = add_node(graph, cudaGraphNodeTypeMemFree, deps, ndeps);
    n->free_ptr = dptr;
    *pNode = n;
    return cudaSuccess;
}

cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void* dptr_out) {
    if (!node || !dptr_out || node->type != cudaGraphNodeTypeMemFree) return cudaErrorInvalidValue;
    *static_cast<void**>(dptr_out) = node->free_ptr;
    return cudaSuccess;
}

cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle, cudaGraph_t graph,
                                             unsigned int defaultLaunchValue, unsigned int flags) {
    if (!pHandle || !graph || flags > 1) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    auto h = std::make_unique<CondState>();
    h->dflt = defaultLaunchValue;
    h->assign_default = flags & cudaGraphCondAssignDefault;
    h->value.store(defaultLaunchValue);
    graph->handles.push_back(h.get());
    *pHandle = reinterpret_cast<cudaGraphConditionalHandle>(h.get());
    g_handles.push_back(std::move(h));
    return cudaSuccess;
}

// cudaGraphAddNode: every node type through one parameter struct (CUDA 12.2+).
cudaError_t cudaGraphAddNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                             const cudaGraphEdgeData*, size_t ndeps, struct cudaGraphNodeParams* p) {
    if (!pNode || !graph || !p || !deps_valid(graph, deps, ndeps)) return cudaErrorInvalidValue;
    switch (p->type) {
        case cudaGraphNodeTypeKernel: {
            cudaKernelNodeParams k{};
            k.func = p->kernel.func;
            k.gridDim = p->kernel.gridDim;
            k.blockDim = p->kernel.blockDim;
            k.sharedMemBytes = p->kernel.sharedMemBytes;
            k.kernelParams = p->kernel.kernelParams;
            k.extra = p->kernel.extra;
            return cudaGraphAddKernelNode(pNode, graph, deps, ndeps, &k);
        }
        case cudaGraphNodeTypeMemcpy:
            return cudaGraphAddMemcpyNode(pNode, graph, deps, ndeps, &p->memcpy.copyParams);
        case cudaGraphNodeTypeMemset: {
            cudaMemsetParams s{};
            s.dst = p->memset.dst;
            s.pitch = p->memset.pitch;
            s.value = p->memset.value;
            s.elementSize = p->memset.elementSize;
            s.width = p->memset.width;
            s.height = p->memset.height;
            return cudaGraphAddMemsetNode(pNode, graph, deps, ndeps, &s);
        }
        case cudaGraphNodeTypeHost: {
            cudaHostNodeParams h{p->host.fn, p->host.userData};
            return cudaGraphAddHostNode(pNode, graph, deps, ndeps, &h);
        }
        case cudaGraphNodeTypeGraph: {
            if (p->graph.ownership == cudaGraphChildGraphOwnershipMove) {
                if (!p->graph.graph || p->graph.graph == graph) return cudaErrorInvalidValue;
                std::lock_guard<std::recursive_mutex> lock(g_m);
                Node* n = add_node(graph, cudaGraphNodeTypeGraph, deps, ndeps);
                n->child = p->graph.graph;  // the parent owns it now
                *pNode = n;
                return cudaSuccess;
            }
            cudaError_t e = cudaGraphAddChildGraphNode(pNode, graph, deps, ndeps, p->graph.graph);
            if (e == cudaSuccess) p->graph.graph = (*pNode)->child;
            return e;
        }
        case cudaGraphNodeTypeEmpty:
            return cudaGraphAddEmptyNode(pNode, graph, deps, ndeps);
        case cudaGraphNodeTypeWaitEvent:
            return cudaGraphAddEventWaitNode(pNode, graph, deps, ndeps, p->eventWait.event);
        case cudaGraphNodeTypeEventRecord:
            return cudaGraphAddEventRecordNode(pNode, graph, deps, ndeps, p->eventRecord.event);
        case cudaGraphNodeTypeMemAlloc: {
            cudaMemAllocNodeParams a{};
            a.poolProps = p->alloc.poolProps;
            a.accessDescs = p->alloc.accessDescs;
            a.accessDescCount = p->alloc.accessDescCount;
            a.bytesize = p->alloc.bytesize;
            cudaError_t e = cudaGraphAddMemAllocNode(pNode, graph, deps, ndeps, &a);
            p->alloc.dptr = a.dptr;
            return e;
        }
        case cudaGraphNodeTypeMemFree:
            return cudaGraphAddMemFreeNode(pNode, graph, deps, ndeps, p->free.dptr);
        case cudaGraphNodeTypeConditional: {
            const cudaConditionalNodeParams& c = p->conditional;
            if (!c.handle || c.size == 0) return cudaErrorInvalidValue;
            if ((c.type == cudaGraphCondTypeWhile && c.size != 1) || (c.type == cudaGraphCondTypeIf && c.size > 2) ||
                (int)c.type < 0 || (int)c.type > 2)
                return cudaErrorInvalidValue;
            std::lock_guard<std::recursive_mutex> lock(g_m);
            Node* n = add_node(graph, cudaGraphNodeTypeConditional, deps, ndeps);
            n->cond = reinterpret_cast<CondState*>(c.handle);
            n->cond_type = c.type;
            for (unsigned i = 0; i < c.size; ++i) {
                n->bodies.push_back(new Graph());
                n->bodies_out.push_back(n->bodies.back());
            }
            p->conditional.phGraph_out = n->bodies_out.data();  // valid for the node's lifetime
            *pNode = n;
            return cudaSuccess;
        }
        default:
            fprintf(stderr, "veriforge: cudaGraphAddNode: node type %d (external semaphores) is not supported by the "
                    "CPU runtime\n", (int)p->type);
            return cudaErrorNotSupported;
    }
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* type) {
    if (!node || !type) return cudaErrorInvalidValue;
    *type = node->type;
    return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
    if (!graph || !count) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    if (!nodes) {
        *count = graph->nodes.size();
        return cudaSuccess;
    }
    size_t n = std::min(*count, graph->nodes.size());
    for (size_t i = 0; i < n; ++i) nodes[i] = graph->nodes[i].get();
    for (size_t i = n; i < *count; ++i) nodes[i] = nullptr;
    *count = n;
    return cudaSuccess;
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* roots, size_t* count) {
    if (!graph || !count) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    std::vector<Node*> found;
    for (const auto& n : graph->nodes)
        if (n->deps.empty()) found.push_back(n.get());
    if (!roots) {
        *count = found.size();
        return cudaSuccess;
    }
    size_t n = std::min(*count, found.size());
    for (size_t i = 0; i < n; ++i) roots[i] = found[i];
    for (size_t i = n; i < *count; ++i) roots[i] = nullptr;
    *count = n;
    return cudaSuccess;
}

cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                              cudaGraphEdgeData* edge_data, size_t* count) {
    if (!graph || !count || (!from != !to)) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    std::vector<std::pair<Node*, Node*>> edges;
    for (const auto& n : graph->nodes)
        for (Node* d : n->deps) edges.push_back({d, n.get()});
    if (!from) {
        *count = edges.size();
        return cudaSuccess;
    }
    size_t n = std::min(*count, edges.size());
    for (size_t i = 0; i < n; ++i) {
        from[i] = edges[i].first;
        to[i] = edges[i].second;
        if (edge_data) memset(&edge_data[i], 0, sizeof edge_data[i]);
    }
    for (size_t i = n; i < *count; ++i) from[i] = to[i] = nullptr;
    *count = n;
    return cudaSuccess;
}

static cudaError_t list_nodes(const std::vector<Node*>& found, cudaGraphNode_t* out, cudaGraphEdgeData* edge_data,
                              size_t* count) {
    if (!out) {
        *count = found.size();
        return cudaSuccess;
    }
    size_t n = std::min(*count, found.size());
    for (size_t i = 0; i < n; ++i) {
        out[i] = found[i];
        if (edge_data) memset(&edge_data[i], 0, sizeof edge_data[i]);
    }
    for (size_t i = n; i < *count; ++i) out[i] = nullptr;
    *count = n;
    return cudaSuccess;
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* deps, cudaGraphEdgeData* edge_data,
                                         size_t* count) {
    if (!node || !count) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return list_nodes(node->deps, deps, edge_data, count);
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* dependents,
                                           cudaGraphEdgeData* edge_data, size_t* count) {
    if (!node || !count) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    std::vector<Node*> found;
    for (const auto& n : node->graph->nodes)
        if (std::find(n->deps.begin(), n->deps.end(), node) != n->deps.end()) found.push_back(n.get());
    return list_nodes(found, dependents, edge_data, count);
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                     const cudaGraphEdgeData*, size_t count) {
    if (!graph || (count && (!from || !to))) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    for (size_t i = 0; i < count; ++i) {
        if (!from[i] || !to[i] || from[i]->graph != graph || to[i]->graph != graph || from[i] == to[i])
            return cudaErrorInvalidValue;
        if (std::find(to[i]->deps.begin(), to[i]->deps.end(), from[i]) != to[i]->deps.end())
            return cudaErrorInvalidValue;  // the edge exists already
    }
    for (size_t i = 0; i < count; ++i) to[i]->deps.push_back(from[i]);
    return cudaSuccess;
}

cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                        const cudaGraphEdgeData*, size_t count) {
    if (!graph || (count && (!from || !to))) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    for (size_t i = 0; i < count; ++i) {
        if (!from[i] || !to[i] || to[i]->graph != graph) return cudaErrorInvalidValue;
        auto it = std::find(to[i]->deps.begin(), to[i]->deps.end(), from[i]);
        if (it == to[i]->deps.end()) return cudaErrorInvalidValue;
    }
    for (size_t i = 0; i < count; ++i) {
        auto& d = to[i]->deps;
        d.erase(std::find(d.begin(), d.end(), from[i]));
    }
    return cudaSuccess;
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
    if (!node) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Graph* g = node->graph;
    for (auto& n : g->nodes) {
        auto& d = n->deps;
        d.erase(std::remove(d.begin(), d.end(), node), d.end());
    }
    auto it = std::find_if(g->nodes.begin(), g->nodes.end(), [&](const auto& p) { return p.get() == node; });
    if (it != g->nodes.end()) g->nodes.erase(it);
    return cudaSuccess;
}

// ---- executable graphs ------------------------------------------------------------------------------
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pExec, cudaGraph_t graph, unsigned long long flags) {
    if (!pExec || !graph) return cudaErrorInvalidValue;
    if (flags & cudaGraphInstantiateFlagDeviceLaunch) {
        fprintf(stderr, "veriforge: cudaGraphInstantiate: device-launchable graphs (cudaGraphInstantiateFlagDeviceLaunch) "
                "are not supported by the CPU runtime\n");
        return cudaErrorNotSupported;
    }
    std::lock_guard<std::recursive_mutex> lock(g_m);
    auto* exec = new CUgraphExec_st();
    exec->flags = flags;
    exec->graph = clone_graph(graph, &exec->nodes);
    if (!topo_order(exec->graph, exec->order)) {
        delete exec;
        *pExec = nullptr;
        return cudaErrorInvalidValue;  // a cycle
    }
    *pExec = exec;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pExec, cudaGraph_t graph, unsigned long long flags) {
    return cudaGraphInstantiateWithFlags(pExec, graph, flags);
}

cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* pExec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams* params) {
    if (!params) return cudaErrorInvalidValue;
    cudaError_t e = cudaGraphInstantiateWithFlags(pExec, graph, params->flags & ~(unsigned long long)cudaGraphInstantiateFlagUpload);
    params->errNode_out = nullptr;
    params->result_out = e == cudaSuccess ? cudaGraphInstantiateSuccess
                         : e == cudaErrorInvalidValue ? cudaGraphInstantiateInvalidStructure
                                                     : cudaGraphInstantiateError;
    return e;
}

cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t exec, unsigned long long* flags) {
    if (!exec || !flags) return cudaErrorInvalidValue;
    *flags = exec->flags;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    if (!exec) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t) {
    return exec ? cudaSuccess : cudaErrorInvalidValue;  // nothing to upload: graphs run on the host
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
    if (!exec) return cudaErrorInvalidValue;
    {
        std::lock_guard<std::recursive_mutex> lock(g_m);
        if (CapturingStream* cs = capturing(stream)) {  // launched into a capture: a child graph node
            if (cs->cap->invalidated) return cudaErrorStreamCaptureInvalidated;
            if (has_memory_nodes(exec->graph)) return cudaErrorNotSupported;
            Node* n = capture_node(cs, cudaGraphNodeTypeGraph);
            n->child = clone_graph(exec->graph, nullptr);
            return cudaSuccess;
        }
        std::set<CondState*> handles;
        collect_handles(exec->graph, handles);
        for (CondState* h : handles)
            if (h->assign_default) h->value.store(h->dflt);
        std::vector<Backing*> allocs;
        collect_allocs(exec->graph, allocs);
        for (Backing* b : allocs) {
            if (!b->live) continue;
            if (exec->flags & cudaGraphInstantiateFlagAutoFreeOnLaunch) {
                mark_freed(b);
                continue;
            }
            fprintf(stderr, "veriforge: cudaGraphLaunch: the graph allocation at %p (%zu bytes) is still allocated from "
                    "an earlier launch; free it before relaunching (or instantiate with "
                    "cudaGraphInstantiateFlagAutoFreeOnLaunch)\n", b->ptr, b->size);
            return cudaErrorInvalidValue;
        }
    }
    return (cudaError_t)run_graph(exec->graph, stream, &exec->order);
}

static Node* exec_node(cudaGraphExec_t exec, cudaGraphNode_t node) {
    if (!exec || !node) return nullptr;
    auto it = exec->nodes.find(node);
    return it == exec->nodes.end() ? nullptr : it->second;
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const struct cudaKernelNodeParams* p) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = exec_node(exec, node);
    if (!n || !p) return cudaErrorInvalidValue;
    if (p->func && n->kernel->func && p->func != n->kernel->func) return cudaErrorInvalidValue;  // same kernel only
    return set_kernel(n, p);
}
cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const struct cudaMemcpy3DParms* p) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return set_copy(exec_node(exec, node), p);
}
cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec, cudaGraphNode_t node, void* dst, const void* src,
                                               size_t count, enum cudaMemcpyKind kind) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return set_copy_1d(exec_node(exec, node), dst, src, count, kind);
}
cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const struct cudaMemsetParams* p) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return cudaGraphMemsetNodeSetParams(exec_node(exec, node), p);
}
cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                           const struct cudaHostNodeParams* p) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return cudaGraphHostNodeSetParams(exec_node(exec, node), p);
}
cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraph_t child) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = exec_node(exec, node);
    if (!n || !child || n->type != cudaGraphNodeTypeGraph) return cudaErrorInvalidValue;
    Graph* fresh = clone_graph(child, nullptr);
    delete n->child;
    n->child = fresh;
    return cudaSuccess;
}
cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node, cudaEvent_t event) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return cudaGraphEventRecordNodeSetEvent(exec_node(exec, node), event);
}
cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node, cudaEvent_t event) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    return cudaGraphEventWaitNodeSetEvent(exec_node(exec, node), event);
}
cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned int enabled) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = exec_node(exec, node);
    if (!n) return cudaErrorInvalidValue;
    if (n->type != cudaGraphNodeTypeKernel && n->type != cudaGraphNodeTypeMemcpy && n->type != cudaGraphNodeTypeMemset)
        return cudaErrorInvalidValue;  // as CUDA: kernel, memcpy and memset nodes only
    n->enabled = enabled != 0;
    return cudaSuccess;
}
cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned int* enabled) {
    std::lock_guard<std::recursive_mutex> lock(g_m);
    Node* n = exec_node(exec, node);
    if (!n || !enabled) return cudaErrorInvalidValue;
    *enabled = n->enabled;
    return cudaSuccess;
}

// Updates an executable graph from a graph of the same topology (CUDA 12 signature): node i of
// `graph` (in creation order) updates node i of the executable graph.
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo* info) {
    cudaGraphExecUpdateResultInfo local{};
    if (!info) info = &local;
    *info = cudaGraphExecUpdateResultInfo{};
    if (!exec || !graph) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    auto fail = [&](cudaGraphExecUpdateResult r, Node* node, Node* from = nullptr) {
        info->result = r;
        info->errorNode = node;
        info->errorFromNode = from;
        return cudaErrorGraphExecUpdateFailure;
    };
    const auto& mine = exec->graph->nodes;
    const auto& theirs = graph->nodes;
    if (mine.size() != theirs.size()) return fail(cudaGraphExecUpdateErrorTopologyChanged, nullptr);
    std::map<const Node*, size_t> my_pos, their_pos;
    for (size_t i = 0; i < mine.size(); ++i) {
        my_pos[mine[i].get()] = i;
        their_pos[theirs[i].get()] = i;
    }
    for (size_t i = 0; i < mine.size(); ++i) {
        Node* a = mine[i].get();
        Node* b = theirs[i].get();
        if (a->type != b->type) return fail(cudaGraphExecUpdateErrorNodeTypeChanged, b);
        std::set<size_t> da, db;
        for (Node* d : a->deps) da.insert(my_pos[d]);
        for (Node* d : b->deps) db.insert(their_pos[d]);
        if (da != db) return fail(cudaGraphExecUpdateErrorTopologyChanged, b);
        switch (a->type) {
            case cudaGraphNodeTypeKernel:
                if (strcmp(a->kernel->spec.kernel_name, b->kernel->spec.kernel_name) != 0 ||
                    (a->kernel->func && b->kernel->func && a->kernel->func != b->kernel->func))
                    return fail(cudaGraphExecUpdateErrorFunctionChanged, b);
                break;
            case cudaGraphNodeTypeMemAlloc:
            case cudaGraphNodeTypeMemFree:
                if (a->backing != b->backing || a->free_ptr != b->free_ptr)
                    return fail(cudaGraphExecUpdateErrorNotSupported, b);
                break;
            case cudaGraphNodeTypeConditional:
                if (a->cond != b->cond || a->cond_type != b->cond_type || a->bodies.size() != b->bodies.size())
                    return fail(cudaGraphExecUpdateErrorParametersChanged, b);
                break;
            default:
                break;
        }
    }
    for (size_t i = 0; i < mine.size(); ++i) {
        Node* a = mine[i].get();
        Node* b = theirs[i].get();
        bool enabled = a->enabled;
        Backing* keep = a->backing;
        copy_node_params(a, b);
        a->enabled = enabled;
        a->backing = keep;
        if (b->child) {
            delete a->child;
            a->child = clone_graph(b->child, nullptr);
        }
        if (!b->bodies.empty()) {
            for (Graph* g : a->bodies) delete g;
            a->bodies.clear();
            a->bodies_out.clear();
            for (Graph* g : b->bodies) {
                a->bodies.push_back(clone_graph(g, nullptr));
                a->bodies_out.push_back(a->bodies.back());
            }
        }
        exec->nodes[b] = a;  // the new graph's nodes name ours from now on
    }
    info->result = cudaGraphExecUpdateSuccess;
    return cudaSuccess;
}

// ---- graph memory -----------------------------------------------------------------------------
cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void* value) {
    if (device != 0) return cudaErrorInvalidDevice;
    if (!value) return cudaErrorInvalidValue;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    uint64_t v;
    switch (attr) {
        case cudaGraphMemAttrUsedMemCurrent: v = g_graph_phys; break;
        case cudaGraphMemAttrUsedMemHigh: v = g_graph_phys_high; break;
        case cudaGraphMemAttrReservedMemCurrent: v = g_graph_phys; break;
        case cudaGraphMemAttrReservedMemHigh: v = g_graph_phys_high; break;
        default: return cudaErrorInvalidValue;
    }
    *static_cast<uint64_t*>(value) = v;
    return cudaSuccess;
}

cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void* value) {
    if (device != 0) return cudaErrorInvalidDevice;
    if (!value || *static_cast<uint64_t*>(value) != 0) return cudaErrorInvalidValue;  // high watermarks: reset only
    std::lock_guard<std::recursive_mutex> lock(g_m);
    if (attr == cudaGraphMemAttrUsedMemHigh || attr == cudaGraphMemAttrReservedMemHigh)
        g_graph_phys_high = g_graph_phys;
    else
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

cudaError_t cudaDeviceGraphMemTrim(int device) {
    if (device != 0) return cudaErrorInvalidDevice;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    g_graph_phys = g_graph_live;  // memory of freed graph allocations goes back to the OS
    return cudaSuccess;
}

// ---- user objects (reference-counted destructors a graph keeps alive) ---------------------------------
struct CUuserObject_st {
    void* ptr;
    cudaHostFn_t destroy;
    std::atomic<long> refs;
};

cudaError_t cudaUserObjectCreate(cudaUserObject_t* out, void* ptr, cudaHostFn_t destroy, unsigned int initial,
                                 unsigned int flags) {
    if (!out || !destroy || !initial || flags != cudaUserObjectNoDestructorSync) return cudaErrorInvalidValue;
    *out = new CUuserObject_st{ptr, destroy, (long)initial};
    return cudaSuccess;
}
cudaError_t cudaUserObjectRetain(cudaUserObject_t obj, unsigned int count) {
    if (!obj || !count) return cudaErrorInvalidValue;
    obj->refs.fetch_add(count);
    return cudaSuccess;
}
cudaError_t cudaUserObjectRelease(cudaUserObject_t obj, unsigned int count) {
    if (!obj || !count) return cudaErrorInvalidValue;
    if (obj->refs.fetch_sub(count) == (long)count) {
        obj->destroy(obj->ptr);
        delete obj;
    }
    return cudaSuccess;
}
cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t obj, unsigned int count, unsigned int flags) {
    if (!graph || !obj) return cudaErrorInvalidValue;
    // The graph's references are kept for the process (graphs here do not track them).
    return (flags & cudaGraphUserObjectMove) ? cudaSuccess : cudaUserObjectRetain(obj, count);
}
cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t obj, unsigned int count) {
    if (!graph || !obj) return cudaErrorInvalidValue;
    return cudaUserObjectRelease(obj, count);
}

// ---- DOT output -------------------------------------------------------------------------------
cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int) {
    if (!graph || !path) return cudaErrorInvalidValue;
    FILE* f = fopen(path, "w");
    if (!f) return cudaErrorOperatingSystem;
    std::lock_guard<std::recursive_mutex> lock(g_m);
    static const char* names[] = {"KERNEL", "MEMCPY", "MEMSET", "HOST", "GRAPH", "EMPTY", "WAIT_EVENT",
                                  "EVENT_RECORD", "SEM_SIGNAL", "SEM_WAIT", "MEM_ALLOC", "MEM_FREE", "?",
                                  "CONDITIONAL"};
    fprintf(f, "digraph dot {\n");
    for (const auto& n : graph->nodes) {
        int t = (int)n->type;
        const char* label = t >= 0 && t < 14 ? names[t] : "?";
        fprintf(f, "  node%u [label=\"%s", n->index, label);
        if (n->type == cudaGraphNodeTypeKernel)
            fprintf(f, "\\n%s\\n<<<(%u,%u,%u),(%u,%u,%u),%zu>>>", n->kernel->spec.kernel_name, n->kernel->spec.grid.x,
                    n->kernel->spec.grid.y, n->kernel->spec.grid.z, n->kernel->spec.block.x, n->kernel->spec.block.y,
                    n->kernel->spec.block.z, n->kernel->spec.shared_bytes);
        fprintf(f, "\"];\n");
    }
    for (const auto& n : graph->nodes)
        for (Node* d : n->deps) fprintf(f, "  node%u -> node%u;\n", d->index, n->index);
    fprintf(f, "}\n");
    fclose(f);
    return cudaSuccess;
}

}  // extern "C"

#endif  // VF_HAVE_CUDA_HEADERS

// ---- deferred launches: stream capture or dynamic parallelism ------------------------------------
namespace vf {
#if defined(VF_HAVE_CUDA_HEADERS)
bool capture_launch_is_deferred(cudaStream_t stream);
int capture_kernel(DeferredLaunch* launch, cudaStream_t stream);
#endif

bool launch_is_deferred(cudaStream_t stream) {
    if (in_kernel()) return true;
#if defined(VF_HAVE_CUDA_HEADERS)
    return capture_launch_is_deferred(stream);
#else
    (void)stream;
    return false;
#endif
}

DeferredLaunch::DeferredLaunch(const DeferredLaunch& other)
    : spec(other.spec), func(other.func), arg_ptrs(other.arg_ptrs), arg_sizes(other.arg_sizes) {}
DeferredLaunch::~DeferredLaunch() = default;
void DeferredLaunch::set_layout(void* const* ptrs, const unsigned* sizes, size_t n) {
    arg_ptrs.assign(ptrs, ptrs + n);
    arg_sizes.assign(sizes, sizes + n);
}

int submit_deferred(DeferredLaunch* launch, cudaStream_t stream) {
    if (in_kernel()) return submit_device_launch(launch, stream);
#if defined(VF_HAVE_CUDA_HEADERS)
    return capture_kernel(launch, stream);
#else
    int err = host_launch(launch->spec, stream);
    delete launch;
    return err;
#endif
}

int refuse_deferred(const char* name, cudaStream_t) {
    fprintf(stderr, "veriforge: kernel '%s': a launch through an expression (function pointer, table, member) cannot "
            "be recorded by stream capture or launched from device code by the CPU runtime\n", name);
    return cudaErrorNotSupported;
}

}  // namespace vf
