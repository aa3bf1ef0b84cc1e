/*
 * nsenter for the conformance harness's agnhost stand-in: `nsenter --mount=FILE [--] CMD [ARG...]`
 * joins the mount namespace FILE names, then runs CMD found on PATH in that namespace's root.
 *
 * Why: upstream's storage tests reach the node through a hostexec pod (agnhost) that runs
 * `nsenter --mount=/rootfs/proc/1/ns/mnt -- sh -c '... losetup ...'`, expecting the node's own sh
 * and tools, as alpine's busybox nsenter in upstream's agnhost gives them. The stand-in agnhost is
 * Debian's busybox-static, whose nsenter and sh prefer their own applets (FEATURE_PREFER_APPLETS,
 * FEATURE_SH_STANDALONE): `sh` and `losetup` stay busybox's whatever namespace they run in, and
 * busybox's losetup cannot list devices (`losetup | grep FILE`), so the block tests fail in setup.
 * Only what those tests use is here (--mount=FILE, -m FILE, --); anything else is an error naming it.
 * Built static (gcc -static -O2) so it runs in the image without a libc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  const char *mnt = NULL;
  int i = 1;
  for (; i < argc; i++) {
    if (strncmp(argv[i], "--mount=", 8) == 0) mnt = argv[i] + 8;
    else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc) mnt = argv[++i];
    else if (strcmp(argv[i], "--") == 0) { i++; break; }
    else if (argv[i][0] == '-') {
      fprintf(stderr, "nsenter (kubelet-ts conformance stand-in): option %s not supported (only --mount=FILE)\n", argv[i]);
      return 125;
    } else break;
  }
  if (!mnt || i >= argc) {
    fprintf(stderr, "usage: nsenter --mount=FILE [--] CMD [ARG...]\n");
    return 125;
  }
  int fd = open(mnt, O_RDONLY | O_CLOEXEC);
  if (fd < 0) { fprintf(stderr, "nsenter: can't open '%s': %s\n", mnt, strerror(errno)); return 125; }
  /* setns(CLONE_NEWNS) also moves root and cwd to the namespace's root, so PATH is the node's */
  if (setns(fd, CLONE_NEWNS) != 0) { fprintf(stderr, "nsenter: setns %s: %s\n", mnt, strerror(errno)); return 125; }
  execvp(argv[i], argv + i);
  fprintf(stderr, "nsenter: exec %s: %s\n", argv[i], strerror(errno));
  return errno == ENOENT ? 127 : 126;
}
