#!/usr/bin/env python3
"""A CUDA check that needs no nvcc: uses the driver API in libcuda.so.1 through
ctypes (the library sbx mounts into the sandbox), JIT-compiles a PTX kernel
(exercising libnvidia-ptxjitcompiler), runs it on every visible GPU and checks
the result on the CPU.

Prints "cuda_driver_check: OK devices=N names=..." and exits 0, or
"cuda_driver_check: FAIL ..." and exits 1. Used by verify_on_gpu_host.sh.
"""
import ctypes
import sys

# out[i] = in[i] * 2 + i, for i < n
PTX = b"""
.version 6.0
.target sm_50
.address_size 64

.visible .entry twice_plus_index(.param .u64 p_in, .param .u64 p_out, .param .u32 n)
{
    .reg .pred  %p<2>;
    .reg .b32   %r<8>;
    .reg .b64   %rd<8>;

    ld.param.u64    %rd1, [p_in];
    ld.param.u64    %rd2, [p_out];
    ld.param.u32    %r1, [n];
    mov.u32         %r2, %ctaid.x;
    mov.u32         %r3, %ntid.x;
    mov.u32         %r4, %tid.x;
    mad.lo.s32      %r5, %r2, %r3, %r4;
    setp.ge.u32     %p1, %r5, %r1;
    @%p1 bra        DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32    %rd5, %r5, 4;
    add.s64         %rd6, %rd3, %rd5;
    ld.global.u32   %r6, [%rd6];
    shl.b32         %r7, %r6, 1;
    add.s32         %r7, %r7, %r5;
    add.s64         %rd7, %rd4, %rd5;
    st.global.u32   [%rd7], %r7;
DONE:
    ret;
}
"""


def fail(msg):
    print("cuda_driver_check: FAIL " + msg)
    sys.exit(1)


def main():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        fail("cannot load libcuda.so.1: %s" % e)

    def check(name, *args):
        try:
            fn = getattr(cu, name)
        except AttributeError:
            fail("libcuda.so.1 has no %s (not the NVIDIA driver's libcuda?)" % name)
        rc = fn(*args)
        if rc != 0:
            s = ctypes.c_char_p()
            cu.cuGetErrorString(rc, ctypes.byref(s))
            fail("%s returned %d (%s)" % (name, rc, s.value.decode() if s.value else "?"))

    check("cuInit", 0)
    count = ctypes.c_int()
    check("cuDeviceGetCount", ctypes.byref(count))
    if count.value < 1:
        fail("no CUDA devices visible")
    names = []
    n = 1 << 16
    for dev_index in range(count.value):
        dev = ctypes.c_int()
        check("cuDeviceGet", ctypes.byref(dev), dev_index)
        name = ctypes.create_string_buffer(256)
        check("cuDeviceGetName", name, 256, dev)
        names.append(name.value.decode())
        ctx = ctypes.c_void_p()
        check("cuCtxCreate_v2", ctypes.byref(ctx), 0, dev)
        mod = ctypes.c_void_p()
        check("cuModuleLoadData", ctypes.byref(mod), ctypes.c_char_p(PTX))
        fn = ctypes.c_void_p()
        check("cuModuleGetFunction", ctypes.byref(fn), mod, b"twice_plus_index")
        host_in = (ctypes.c_uint32 * n)(*[(7 * i + 3) & 0xFFFF for i in range(n)])
        host_out = (ctypes.c_uint32 * n)()
        d_in, d_out = ctypes.c_uint64(), ctypes.c_uint64()
        check("cuMemAlloc_v2", ctypes.byref(d_in), ctypes.c_size_t(4 * n))
        check("cuMemAlloc_v2", ctypes.byref(d_out), ctypes.c_size_t(4 * n))
        check("cuMemcpyHtoD_v2", d_in, host_in, ctypes.c_size_t(4 * n))
        a_in, a_out, a_n = ctypes.c_uint64(d_in.value), ctypes.c_uint64(d_out.value), ctypes.c_uint32(n)
        params = (ctypes.c_void_p * 3)(ctypes.cast(ctypes.byref(a_in), ctypes.c_void_p),
                                       ctypes.cast(ctypes.byref(a_out), ctypes.c_void_p),
                                       ctypes.cast(ctypes.byref(a_n), ctypes.c_void_p))
        check("cuLaunchKernel", fn, (n + 255) // 256, 1, 1, 256, 1, 1, 0, None, params, None)
        check("cuCtxSynchronize")
        check("cuMemcpyDtoH_v2", host_out, d_out, ctypes.c_size_t(4 * n))
        for i in range(n):
            want = (2 * host_in[i] + i) & 0xFFFFFFFF
            if host_out[i] != want:
                fail("device %d: out[%d] = %d, expected %d" % (dev_index, i, host_out[i], want))
        cu.cuMemFree_v2(d_in)
        cu.cuMemFree_v2(d_out)
        cu.cuCtxDestroy_v2(ctx)
    print("cuda_driver_check: OK devices=%d names=%s" % (count.value, ",".join(names)))


if __name__ == "__main__":
    main()
