/* tools/check_portable.sh's unwinder check: a backtrace through three frames, by the system gcc's
 * unwinder (libgcc_eh, as CLBlast's C++ exceptions use it) linked against glibc 2.17's symbols:
 * it finds each frame's tables through glibc_compat.c's _dl_find_object. Prints the frames. */
#include <stdio.h>
#include <unwind.h>

static _Unwind_Reason_Code count(struct _Unwind_Context *c, void *frames)
{
    (void)c;
    ++*(int *)frames;
    return _URC_NO_REASON;
}

__attribute__((noinline)) static int third(void)
{
    int frames = 0;
    _Unwind_Backtrace(count, &frames);
    return frames;
}

__attribute__((noinline)) static int second(void) { return third() + 0; }

__attribute__((noinline)) int unwind_check_first(void) { return second() + 0; }

int main(void)
{
    printf("frames %d\n", unwind_check_first());
    return 0;
}
