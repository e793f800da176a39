// A small CUDA program for tests/gpu/verify_on_gpu_host.sh: adds two vectors
// on the GPU and checks every element on the CPU. Prints one line
// "vector_add: OK n=<n> device=<name>" and exits 0, or explains and exits 1.
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::printf("vector_add: FAIL %s: %s\n", #x, cudaGetErrorString(e));           \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main() {
  const int n = 1 << 24;  // 2^24 floats (64 MiB per vector), checked on the host side
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 2.0f * static_cast<float>(i) + 1.0f;
  }
  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, n * sizeof(float)));
  CHECK(cudaMalloc(&db, n * sizeof(float)));
  CHECK(cudaMalloc(&dc, n * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
  // The same single-precision addition on the CPU gives the same rounding
  // (3i+1 itself is not representable above 2^24: 16777222 vs 16777220).
  for (int i = 0; i < n; ++i)
    if (c[i] != a[i] + b[i]) {
      std::printf("vector_add: FAIL c[%d] = %f, expected %f\n", i, c[i], a[i] + b[i]);
      return 1;
    }
  std::printf("vector_add: OK n=%d devices=%d device=%s\n", n, count, prop.name);
  return 0;
}
