/* What the prebuilt static libraries of the portable build (Debian's libstdc++, libgcc_eh,
 * libclblast and libsodium, built against glibc 2.36) call that glibc 2.17 does not have. Linked
 * only into build/portable/frugal (./build.sh portable), whose every other glibc symbol comes
 * from zig's glibc 2.17 stubs, so the binary starts on any glibc from 2.17 on. Each stands in
 * for the newer function with what 2.17 and a 3.10 kernel offer. */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_getrandom
#define SYS_getrandom 318   /* x86-64 */
#endif

/* glibc 2.32: whether the process has one thread. Never claimed: libstdc++ then always uses
 * atomic reference counts, which is correct with any number of threads. */
char __libc_single_threaded = 0;

/* glibc 2.25. The system call exists from Linux 3.17; before, ENOSYS, and libsodium reads
 * /dev/urandom instead. */
ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    return syscall(SYS_getrandom, buf, len, flags);
}

/* glibc 2.25: at most 256 bytes of the kernel's randomness, from getrandom or /dev/urandom. */
int getentropy(void *buf, size_t len)
{
    if (len > 256) {
        errno = EIO;
        return -1;
    }
    for (size_t got = 0; got < len;) {
        ssize_t n = getrandom((char *)buf + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {   /* an old kernel: the device */
            int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                return -1;
            for (; got < len; got += (size_t)n)
                if ((n = read(fd, (char *)buf + got, len - got)) <= 0 && !(n < 0 && errno == EINTR)) {
                    close(fd);
                    errno = EIO;
                    return -1;
                } else if (n < 0) {
                    n = 0;
                }
            close(fd);
            break;
        }
        got += (size_t)n;
    }
    return 0;
}

/* glibc 2.36 (libstdc++'s std::random_device): libsodium's generator, seeded by the kernel. */
uint32_t arc4random(void)
{
    return randombytes_random();
}

/* glibc 2.25 (libsodium's sodium_memzero, built with _FORTIFY_SOURCE): zeroes that the compiler
 * may not remove. */
void __explicit_bzero_chk(void *p, size_t n, size_t destlen)
{
    if (n > destlen)
        abort();
    volatile unsigned char *v = p;
    for (size_t i = 0; i < n; i++)
        v[i] = 0;
}

/* glibc 2.35 (gcc 12's unwinder finds the frame tables of the code an exception unwinds through):
 * the loaded object holding pc, from dl_iterate_phdr (2.2.4). The struct is dlfcn.h's. */
typedef struct {
    uintptr_t pc;
    struct dl_find_object *found;
    int ok;
} find_state;

static int holds_pc(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    find_state *s = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0, eh = 0;
    int in = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD) {
            lo = start < lo ? start : lo;
            hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
            in |= s->pc >= start && s->pc < start + ph->p_memsz;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            eh = start;
        }
    }
    if (!in)
        return 0;
    *s->found = (struct dl_find_object){.dlfo_map_start = (void *)lo, .dlfo_map_end = (void *)hi,
                                        .dlfo_eh_frame = (void *)eh};
    s->ok = 1;
    return 1;
}

int _dl_find_object(void *pc, struct dl_find_object *result)
{
    find_state s = {(uintptr_t)pc, result, 0};
    dl_iterate_phdr(holds_pc, &s);
    return s.ok ? 0 : -1;
}
