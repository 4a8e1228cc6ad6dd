template <typename T>
__global__ void k(T* out) { out[0] = T::value; }
void launch(float* p) { k<<<1,1>>>(p); }
