/*
 * VKCUDA_NODISCARD and the version extractors, compiled by nodiscard_matrix.sh
 * with GCC and Clang as C99, C11, C23 and C++17 under -Wall -Wextra -Wpedantic
 * -Werror: a result dropped on purpose with a (void) cast compiles without a
 * warning. With -DVKCUDA_DROP_RESULT the result is dropped without a cast, which
 * must warn wherever VKCUDA_NODISCARD is not empty.
 */
#include <vkcuda.h>

#define CHECK_CONST(name, cond) typedef char check_##name[(cond) ? 1 : -1]

CHECK_CONST(major, VKCUDA_VERSION_GET_MAJOR(VKCUDA_VERSION) == VKCUDA_VERSION_MAJOR);
CHECK_CONST(minor, VKCUDA_VERSION_GET_MINOR(VKCUDA_VERSION) == VKCUDA_VERSION_MINOR);
CHECK_CONST(patch, VKCUDA_VERSION_GET_PATCH(VKCUDA_VERSION) == VKCUDA_VERSION_PATCH);
CHECK_CONST(packed, VKCUDA_VERSION_GET_MAJOR(VKCUDA_MAKE_VERSION(3, 1023, 4095)) == 3 &&
                        VKCUDA_VERSION_GET_MINOR(VKCUDA_MAKE_VERSION(3, 1023, 4095)) == 1023 &&
                        VKCUDA_VERSION_GET_PATCH(VKCUDA_MAKE_VERSION(3, 1023, 4095)) == 4095);

int main(void)
{
    vkcuda_live_objects counts;
#ifdef VKCUDA_DROP_RESULT
    vkcuda_live_objects_get(&counts);
#else
    (void)vkcuda_live_objects_get(&counts);
#endif
    (void)vkcuda_semaphore_destroy; /* the functions without a result need no cast */
    return VKCUDA_VERSION_GET_MAJOR(vkcuda_version()) == VKCUDA_VERSION_MAJOR ? 0 : 1;
}
