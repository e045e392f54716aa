/* Built against an installed vkcuda (find_package, or pkg-config): prints the
 * version and checks that the library is the header's version. */
#include <vkcuda.h>

#include <stdio.h>

int main(void)
{
    int32_t cuda = 0;
    vkcuda_result r = vkcuda_cuda_driver_get_version(&cuda);
    printf("consumer (C): vkcuda %s, vkcuda_version()==VKCUDA_VERSION: %s, CUDA: %s\n",
           vkcuda_version_string(), vkcuda_version() == VKCUDA_VERSION ? "yes" : "NO",
           r == VKCUDA_SUCCESS ? "driver found" : vkcuda_result_to_string(r));
    return vkcuda_version() == VKCUDA_VERSION ? 0 : 1;
}
