/*
 * A stand-in for libcuda.so.1 with one device whose UUID matches no Vulkan device,
 * so the CUDA paths of vkcuda can be tested for real on a machine without NVIDIA's
 * driver. Only the calls the library makes before pairing do anything; every other
 * driver call returns CUDA_ERROR_UNKNOWN. FAKE_CUDA_INIT_FAILS makes cuInit fail;
 * building with -DOMIT_MEM_CREATE leaves cuMemCreate out (a driver that is too old).
 */
#include <stdlib.h>
#include <string.h>

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_UNKNOWN 999

typedef struct { unsigned char bytes[16]; } CUuuid;

int cuInit(unsigned flags) {
    (void)flags;
    return getenv("FAKE_CUDA_INIT_FAILS") ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}
int cuDriverGetVersion(int *v) { *v = 12080; return CUDA_SUCCESS; }
int cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN; }
int cuDeviceGetUuid_v2(CUuuid *u, int d) { (void)d; memset(u->bytes, 0xab, 16); return CUDA_SUCCESS; }
int cuDeviceGetName(char *name, int len, int d) {
    (void)d;
    strncpy(name, "vkcuda fake GPU", (size_t)len);
    name[len - 1] = 0;
    return CUDA_SUCCESS;
}

#define UNKNOWN(name) int name(void) { return CUDA_ERROR_UNKNOWN; }
UNKNOWN(cuDevicePrimaryCtxRetain)
UNKNOWN(cuDevicePrimaryCtxRelease_v2)
UNKNOWN(cuCtxPushCurrent_v2)
UNKNOWN(cuCtxPopCurrent_v2)
UNKNOWN(cuCtxGetDevice)
UNKNOWN(cuMemAlloc_v2)
UNKNOWN(cuPointerGetAttribute)
UNKNOWN(cuStreamGetCtx)
UNKNOWN(cuMemGetAllocationGranularity)
#ifndef OMIT_MEM_CREATE
UNKNOWN(cuMemCreate)
#endif
UNKNOWN(cuMemRelease)
UNKNOWN(cuMemAddressReserve)
UNKNOWN(cuMemAddressFree)
UNKNOWN(cuMemMap)
UNKNOWN(cuMemUnmap)
UNKNOWN(cuMemSetAccess)
UNKNOWN(cuMemExportToShareableHandle)
UNKNOWN(cuMemImportFromShareableHandle)
UNKNOWN(cuImportExternalMemory)
UNKNOWN(cuExternalMemoryGetMappedBuffer)
UNKNOWN(cuDestroyExternalMemory)
UNKNOWN(cuMemFree_v2)
UNKNOWN(cuImportExternalSemaphore)
UNKNOWN(cuSignalExternalSemaphoresAsync)
UNKNOWN(cuWaitExternalSemaphoresAsync)
UNKNOWN(cuDestroyExternalSemaphore)
UNKNOWN(cuExternalMemoryGetMappedMipmappedArray)
UNKNOWN(cuMipmappedArrayGetLevel)
UNKNOWN(cuMipmappedArrayDestroy)
UNKNOWN(cuSurfObjectCreate)
UNKNOWN(cuSurfObjectDestroy)
UNKNOWN(cuTexObjectCreate)
UNKNOWN(cuTexObjectDestroy)
UNKNOWN(cuGetErrorName)
