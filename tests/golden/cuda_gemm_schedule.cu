/* tessera: gemm, grid (2, 2, 1), block (16, 16, 1), 10240 bytes of shared memory */
static __device__ __forceinline__ void ts_cp_async4(void *d, const void *s)
{
#if __CUDA_ARCH__ >= 800
  asm volatile("{ .reg .u64 a, g; .reg .u32 p; cvta.to.shared.u64 a, %0; cvt.u32.u64 p, a; cvta.to.global.u64 g, %1; "
               "cp.async.ca.shared.global [p], [g], 4; }" :: "l"(d), "l"(s) : "memory");
#else
  *(unsigned *)d = *(const unsigned *)s;
#endif
}
static __device__ __forceinline__ void ts_cp_async8(void *d, const void *s)
{
#if __CUDA_ARCH__ >= 800
  asm volatile("{ .reg .u64 a, g; .reg .u32 p; cvta.to.shared.u64 a, %0; cvt.u32.u64 p, a; cvta.to.global.u64 g, %1; "
               "cp.async.ca.shared.global [p], [g], 8; }" :: "l"(d), "l"(s) : "memory");
#else
  *(uint2 *)d = *(const uint2 *)s;
#endif
}
static __device__ __forceinline__ void ts_cp_async16(void *d, const void *s)
{
#if __CUDA_ARCH__ >= 800
  asm volatile("{ .reg .u64 a, g; .reg .u32 p; cvta.to.shared.u64 a, %0; cvt.u32.u64 p, a; cvta.to.global.u64 g, %1; "
               "cp.async.cg.shared.global [p], [g], 16; }" :: "l"(d), "l"(s) : "memory");
#else
  *(uint4 *)d = *(const uint4 *)s;
#endif
}
static __device__ __forceinline__ void ts_cp_async_wait(void)
{
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

static __device__ __forceinline__ int ts_floordiv_i32(int a, int b)
{
  int q = a / b;
  return (q * b != a && (a < 0) != (b < 0)) ? q - 1 : q;
}

static __device__ __forceinline__ int ts_floormod_i32(int a, int b)
{
  int r = a % b;
  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}

extern "C" __global__ void __launch_bounds__(256) gemm(float *__restrict__ A, float *__restrict__ B, float *__restrict__ matmul)
{
  __shared__ __align__(16) float A_shared[768];
  __shared__ __align__(16) float B_shared[512];
  __shared__ __align__(16) float A_shared_1[768];
  __shared__ __align__(16) float B_shared_1[512];
  int i_outer = blockIdx.y;
  int j_outer = blockIdx.x;
  int i_inner_outer = threadIdx.y;
  int j_inner_outer = threadIdx.x;
  float matmul_local[16];
  matmul_local[0] = 0.0f;
  matmul_local[1] = 0.0f;
  matmul_local[2] = 0.0f;
  matmul_local[3] = 0.0f;
  matmul_local[4] = 0.0f;
  matmul_local[5] = 0.0f;
  matmul_local[6] = 0.0f;
  matmul_local[7] = 0.0f;
  matmul_local[8] = 0.0f;
  matmul_local[9] = 0.0f;
  matmul_local[10] = 0.0f;
  matmul_local[11] = 0.0f;
  matmul_local[12] = 0.0f;
  matmul_local[13] = 0.0f;
  matmul_local[14] = 0.0f;
  matmul_local[15] = 0.0f;
  int ax0_ax1_fused_outer_inner_outer = threadIdx.y;
  if (threadIdx.y < 8) {
    int ax0_ax1_fused_outer_inner_inner = threadIdx.x;
    ts_cp_async16(&A_shared[ax0_ax1_fused_outer_inner_outer*96 + ts_floordiv_i32(ax0_ax1_fused_outer_inner_inner, 2)*12 + ts_floormod_i32(ax0_ax1_fused_outer_inner_inner, 2)*4], &A[i_outer*4096 + ax0_ax1_fused_outer_inner_outer*512 + ts_floordiv_i32(ax0_ax1_fused_outer_inner_inner, 2)*64 + ts_floormod_i32(ax0_ax1_fused_outer_inner_inner, 2)*4]);
  }
  int ax0_ax1_fused_outer_inner_outer_1 = threadIdx.y;
  if (threadIdx.y < 8) {
    int ax0_ax1_fused_outer_inner_inner_1 = threadIdx.x;
    ts_cp_async16(&B_shared[ax0_ax1_fused_outer_inner_outer_1*64 + ax0_ax1_fused_outer_inner_inner_1*4], &B[ax0_ax1_fused_outer_inner_outer_1*128 + j_outer*64 + ax0_ax1_fused_outer_inner_inner_1*4]);
  }
  ts_cp_async_wait();
  __syncthreads();
  for (int k_outer_pair = 0; k_outer_pair < 4; ++k_outer_pair) {
    int ax0_ax1_fused_outer_inner_outer_2 = threadIdx.y;
    if (threadIdx.y < 8) {
      int ax0_ax1_fused_outer_inner_inner_2 = threadIdx.x;
      ts_cp_async16(&A_shared_1[ax0_ax1_fused_outer_inner_outer_2*96 + ts_floordiv_i32(ax0_ax1_fused_outer_inner_inner_2, 2)*12 + ts_floormod_i32(ax0_ax1_fused_outer_inner_inner_2, 2)*4], &A[i_outer*4096 + ax0_ax1_fused_outer_inner_outer_2*512 + ts_floordiv_i32(ax0_ax1_fused_outer_inner_inner_2, 2)*64 + k_outer_pair*16 + ts_floormod_i32(ax0_ax1_fused_outer_inner_inner_2, 2)*4 + 8]);
    }
    int ax0_ax1_fused_outer_inner_outer_1_1 = threadIdx.y;
    if (threadIdx.y < 8) {
      int ax0_ax1_fused_outer_inner_inner_1_1 = threadIdx.x;
      ts_cp_async16(&B_shared_1[ax0_ax1_fused_outer_inner_outer_1_1*64 + ax0_ax1_fused_outer_inner_inner_1_1*4], &B[k_outer_pair*2048 + ax0_ax1_fused_outer_inner_outer_1_1*128 + j_outer*64 + ax0_ax1_fused_outer_inner_inner_1_1*4 + 1024]);
    }
    for (int k_inner = 0; k_inner < 8; ++k_inner) {
      matmul_local[0] = matmul_local[0] + A_shared[i_inner_outer*48 + k_inner]*B_shared[k_inner*64 + j_inner_outer*4];
      matmul_local[1] = matmul_local[1] + A_shared[i_inner_outer*48 + k_inner]*B_shared[k_inner*64 + j_inner_outer*4 + 1];
      matmul_local[2] = matmul_local[2] + A_shared[i_inner_outer*48 + k_inner]*B_shared[k_inner*64 + j_inner_outer*4 + 2];
      matmul_local[3] = matmul_local[3] + A_shared[i_inner_outer*48 + k_inner]*B_shared[k_inner*64 + j_inner_outer*4 + 3];
      matmul_local[4] = matmul_local[4] + A_shared[i_inner_outer*48 + k_inner + 12]*B_shared[k_inner*64 + j_inner_outer*4];
      matmul_local[5] = matmul_local[5] + A_shared[i_inner_outer*48 + k_inner + 12]*B_shared[k_inner*64 + j_inner_outer*4 + 1];
      matmul_local[6] = matmul_local[6] + A_shared[i_inner_outer*48 + k_inner + 12]*B_shared[k_inner*64 + j_inner_outer*4 + 2];
      matmul_local[7] = matmul_local[7] + A_shared[i_inner_outer*48 + k_inner + 12]*B_shared[k_inner*64 + j_inner_outer*4 + 3];
      matmul_local[8] = matmul_local[8] + A_shared[i_inner_outer*48 + k_inner + 24]*B_shared[k_inner*64 + j_inner_outer*4];
      matmul_local[9] = matmul_local[9] + A_shared[i_inner_outer*48 + k_inner + 24]*B_shared[k_inner*64 + j_inner_outer*4 + 1];
      matmul_local[10] = matmul_local[10] + A_shared[i_inner_outer*48 + k_inner + 24]*B_shared[k_inner*64 + j_inner_outer*4 + 2];
      matmul_local[11] = matmul_local[11] + A_shared[i_inner_outer*48 + k_inner + 24]*B_shared[k_inner*64 + j_inner_outer*4 + 3];
      matmul_local[12] = matmul_local[12] + A_shared[i_inner_outer*48 + k_inner + 36]*B_shared[k_inner*64 + j_inner_outer*4];
      matmul_local[13] = matmul_local[13] + A_shared[i_inner_outer*48 + k_inner + 36]*B_shared[k_inner*64 + j_inner_outer*4 + 1];
      matmul_local[14] = matmul_local[14] + A_shared[i_inner_outer*48 + k_inner + 36]*B_shared[k_inner*64 + j_inner_outer*4 + 2];
      matmul_local[15] = matmul_local[15] + A_shared[i_inner_outer*48 + k_inner + 36]*B_shared[k_inner*64 + j_inner_outer*4 + 3];
    }
    ts_cp_async_wait();
    __syncthreads();
    if (k_outer_pair*2 + 2 < 8) {
      int ax0_ax1_fused_outer_inner_outer_3 = threadIdx.y;
      if (threadIdx.y < 8) {
        int ax0_ax1_fused_outer_inner_inner_3 = threadIdx.x;
        ts_cp_async16(&A_shared[ax0_ax1_fused_outer_inner_outer_3*96 + ts_floordiv_i32(ax0_ax1_fused_outer_inner_inner_3, 2)*12 + ts_floormod_i32(ax0_ax1_fused_outer_inner_inner_3, 2)*4], &A[i_outer*4096 + ax0_ax1_fused_outer_inner_outer_3*512 + ts_floordiv_i32(ax0_ax1_fused_outer_inner_inner_3, 2)*64 + k_outer_pair*16 + ts_floormod_i32(ax0_ax1_fused_outer_inner_inner_3, 2)*4 + 16]);
      }
      int ax0_ax1_fused_outer_inner_outer_1_2 = threadIdx.y;
      if (threadIdx.y < 8) {
        int ax0_ax1_fused_outer_inner_inner_1_2 = threadIdx.x;
        ts_cp_async16(&B_shared[ax0_ax1_fused_outer_inner_outer_1_2*64 + ax0_ax1_fused_outer_inner_inner_1_2*4], &B[k_outer_pair*2048 + ax0_ax1_fused_outer_inner_outer_1_2*128 + j_outer*64 + ax0_ax1_fused_outer_inner_inner_1_2*4 + 2048]);
      }
    }
    for (int k_inner_1 = 0; k_inner_1 < 8; ++k_inner_1) {
      matmul_local[0] = matmul_local[0] + A_shared_1[i_inner_outer*48 + k_inner_1]*B_shared_1[k_inner_1*64 + j_inner_outer*4];
      matmul_local[1] = matmul_local[1] + A_shared_1[i_inner_outer*48 + k_inner_1]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 1];
      matmul_local[2] = matmul_local[2] + A_shared_1[i_inner_outer*48 + k_inner_1]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 2];
      matmul_local[3] = matmul_local[3] + A_shared_1[i_inner_outer*48 + k_inner_1]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 3];
      matmul_local[4] = matmul_local[4] + A_shared_1[i_inner_outer*48 + k_inner_1 + 12]*B_shared_1[k_inner_1*64 + j_inner_outer*4];
      matmul_local[5] = matmul_local[5] + A_shared_1[i_inner_outer*48 + k_inner_1 + 12]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 1];
      matmul_local[6] = matmul_local[6] + A_shared_1[i_inner_outer*48 + k_inner_1 + 12]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 2];
      matmul_local[7] = matmul_local[7] + A_shared_1[i_inner_outer*48 + k_inner_1 + 12]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 3];
      matmul_local[8] = matmul_local[8] + A_shared_1[i_inner_outer*48 + k_inner_1 + 24]*B_shared_1[k_inner_1*64 + j_inner_outer*4];
      matmul_local[9] = matmul_local[9] + A_shared_1[i_inner_outer*48 + k_inner_1 + 24]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 1];
      matmul_local[10] = matmul_local[10] + A_shared_1[i_inner_outer*48 + k_inner_1 + 24]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 2];
      matmul_local[11] = matmul_local[11] + A_shared_1[i_inner_outer*48 + k_inner_1 + 24]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 3];
      matmul_local[12] = matmul_local[12] + A_shared_1[i_inner_outer*48 + k_inner_1 + 36]*B_shared_1[k_inner_1*64 + j_inner_outer*4];
      matmul_local[13] = matmul_local[13] + A_shared_1[i_inner_outer*48 + k_inner_1 + 36]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 1];
      matmul_local[14] = matmul_local[14] + A_shared_1[i_inner_outer*48 + k_inner_1 + 36]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 2];
      matmul_local[15] = matmul_local[15] + A_shared_1[i_inner_outer*48 + k_inner_1 + 36]*B_shared_1[k_inner_1*64 + j_inner_outer*4 + 3];
    }
    ts_cp_async_wait();
    __syncthreads();
  }
  *(float4 *)&matmul[i_outer*8192 + i_inner_outer*512 + j_outer*64 + j_inner_outer*4] = make_float4(matmul_local[0], matmul_local[1], matmul_local[2], matmul_local[3]);
  *(float4 *)&matmul[i_outer*8192 + i_inner_outer*512 + j_outer*64 + j_inner_outer*4 + 128] = make_float4(matmul_local[4], matmul_local[5], matmul_local[6], matmul_local[7]);
  *(float4 *)&matmul[i_outer*8192 + i_inner_outer*512 + j_outer*64 + j_inner_outer*4 + 256] = make_float4(matmul_local[8], matmul_local[9], matmul_local[10], matmul_local[11]);
  *(float4 *)&matmul[i_outer*8192 + i_inner_outer*512 + j_outer*64 + j_inner_outer*4 + 384] = make_float4(matmul_local[12], matmul_local[13], matmul_local[14], matmul_local[15]);
}
