/* tools/check_portable.sh's entropy check: on a kernel without the getrandom system call (before
 * Linux 3.17, as CentOS 7's 3.10), stood in for here by a seccomp filter that answers ENOSYS,
 * libsodium still draws keys (from /dev/urandom), and glibc_compat.c's getentropy and arc4random
 * answer. Linked as the portable binary is. Prints what it checked; exits non-zero on a failure. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

ssize_t getrandom(void *buf, size_t len, unsigned int flags);   /* glibc_compat.c's */
int getentropy(void *buf, size_t len);
uint32_t arc4random(void);

/* From here on, the getrandom system call fails with ENOSYS. */
static int refuse_getrandom(void)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(void)
{
    unsigned char a[32], b[32];
    if (refuse_getrandom()) {
        perror("seccomp");
        return 2;
    }
    if (getrandom(a, sizeof a, 0) != -1 || errno != ENOSYS) {
        puts("getrandom still answers: the filter is not in place");
        return 1;
    }
    if (sodium_init() < 0) {
        puts("sodium_init failed without getrandom");
        return 1;
    }
    randombytes_buf(a, sizeof a);
    randombytes_buf(b, sizeof b);
    if (!memcmp(a, b, sizeof a)) {
        puts("libsodium drew the same bytes twice");
        return 1;
    }
    if (getentropy(a, sizeof a) || (arc4random() == 0 && arc4random() == 0)) {
        perror("getentropy or arc4random");
        return 1;
    }
    puts("without getrandom: libsodium, getentropy and arc4random drew bytes");
    return 0;
}
