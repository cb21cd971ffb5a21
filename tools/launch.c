/* launch.c: `rlx launch`, starting the processes of a distributed run (rlx/dist.h).
 *
 *   rlx launch -n N [--backend ring|mpi|nccl] [--hostfile FILE] [--grace SECONDS] -- PROGRAM ARGS...
 *
 * ring (default): without --hostfile, picks N free TCP ports on 127.0.0.1 (below the kernel's
 * ephemeral port range, so no outgoing connection can take them first), writes MLX's JSON
 * hostfile ([["127.0.0.1:P0"], ["127.0.0.1:P1"], ...]) to a temporary file and starts N copies
 * of PROGRAM with MLX_HOSTFILE, MLX_RANK (0..N-1) and MLX_WORLD_SIZE set. With --hostfile (MLX's
 * JSON format, one list of "host:port" per rank; -n, when given, must equal its length) it starts
 * the ranks whose first address belongs to this machine, so the same command run on every host
 * starts the whole group; a local port already in use is an error. mpi: runs Open MPI's
 * `mpirun -np N` (as root with --allow-run-as-root; --oversubscribe so N may exceed the cores;
 * --hostfile passed on in Open MPI's own format) with --tag-output. nccl (one host, CUDA GPUs):
 * starts N copies with NCCL_HOST_IP=127.0.0.1, NCCL_PORT (a free port for rank 0's bootstrap),
 * MLX_RANK, MLX_WORLD_SIZE, CUDA_VISIBLE_DEVICES=rank (each rank sees only its GPU, as MLX's own
 * launcher does; kept when already set) and NCCL_NVLS_ENABLE=0 (NVLink multicast off: a program
 * that uses it can put a shared host's GPUs out of service).
 *
 * Every line a rank writes (stdout and stderr) is printed prefixed with "[RANK] ". When a rank
 * fails (non-zero exit or a signal), the others get --grace seconds (default 30) to finish or
 * fail on their own, then SIGTERM and, 2 s later, SIGKILL. The exit status is 0 when every rank
 * succeeded, else the first failing rank's status (128 + signal for a signal); each failure is
 * reported on stderr. Exit status 2: bad arguments or hostfile, a port in use, no local rank.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "launch.h"

#define MAX_RANKS 256

typedef struct rank_proc {
  int rank;
  pid_t pid;
  int fd;          /* read end of its output pipe, -1 once closed */
  char buf[4096];  /* a partial line */
  size_t len;
  bool done;
  int status;
} rank_proc;

static int usage(void) {
  fprintf(stderr, "usage: rlx launch -n N [--backend ring|mpi|nccl] [--hostfile FILE] [--grace SECONDS] -- PROGRAM ARGS...\n");
  return 2;
}

static int err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rlx launch: error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  return 2;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Binds a TCP socket to host:port without SO_REUSEADDR: 0 when free and local, else errno. */
static int try_bind(const char *host, const char *port) {
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
  if (getaddrinfo(host, port, &hints, &res) != 0) return EADDRNOTAVAIL;
  int s = socket(AF_INET, SOCK_STREAM, 0), e = 0;
  if (s < 0 || bind(s, res->ai_addr, res->ai_addrlen) != 0) e = errno;
  if (s >= 0) close(s);
  freeaddrinfo(res);
  return e;
}

/* The lowest port of the kernel's ephemeral range (outgoing connections take their local ports from
 * it), 32768 when it cannot be read. */
static int ephemeral_low(void) {
  int lo = 32768, hi = 0;
  FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (f) {
    if (fscanf(f, "%d %d", &lo, &hi) != 2 || lo < 2048) lo = 32768;
    fclose(f);
  }
  return lo;
}

/* Picks n free ports on 127.0.0.1 below the ephemeral range, from a random start, all bound at once
 * so they differ. A port from the ephemeral range (bind to port 0) could be taken, between this
 * check and MLX's bind, by an outgoing connection of another group running on the machine (its
 * ring connects with ephemeral local ports); ports below the range are never handed out that way. */
static int free_ports(int n, int *ports) {
  int socks[MAX_RANKS], got = 0, lo = ephemeral_low(), base = lo > 12288 ? lo - 10240 : 1024, span = lo - base;
  unsigned seed = (unsigned)time(NULL) ^ ((unsigned)getpid() << 12);
  int start = (int)(rand_r(&seed) % (unsigned)span);
  for (int k = 0; k < span && got < n; k++) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int port = base + (start + k) % span;
    a.sin_port = htons((uint16_t)port);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) break;
    if (bind(s, (struct sockaddr *)&a, sizeof a) == 0) socks[got] = s, ports[got++] = port;
    else close(s);
  }
  for (int i = 0; i < got; i++) close(socks[i]);
  if (got < n) return err("cannot pick %d free ports on 127.0.0.1 below %d", n, lo);
  return 0;
}

/* Writes a ring hostfile of n free ports on 127.0.0.1 to a new temporary file. */
static int write_local_hostfile(int n, char *path, size_t cap) {
  int ports[MAX_RANKS];
  int rc = free_ports(n, ports);
  if (rc) return rc;
  const char *tmp = getenv("TMPDIR");
  snprintf(path, cap, "%s/rlx-launch-XXXXXX.json", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemps(path, 5);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) return err("cannot create the hostfile %s", path);
  fputc('[', f);
  for (int i = 0; i < n; i++) fprintf(f, "%s[\"127.0.0.1:%d\"]", i ? ", " : "", ports[i]);
  fputs("]\n", f);
  fclose(f);
  return 0;
}

/* Reads a JSON hostfile: its rank count, and which ranks are local (their first address can be
 * bound here). A local port in use is an error. */
static int read_hostfile(const char *path, int *n, bool *local) {
  FILE *f = fopen(path, "rb");
  if (!f) return err("cannot open the hostfile '%s'", path);
  static char text[1 << 20];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  cJSON *j = cJSON_Parse(text);
  int rc = 0;
  if (!j || !cJSON_IsArray(j) || cJSON_GetArraySize(j) < 1 || cJSON_GetArraySize(j) > MAX_RANKS)
    rc = err("hostfile '%s' is not a JSON list of 1 to %d address lists", path, MAX_RANKS);
  for (int r = 0; !rc && r < cJSON_GetArraySize(j); r++) {
    cJSON *h = cJSON_GetArrayItem(j, r);
    const char *a = cJSON_IsArray(h) ? cJSON_GetStringValue(cJSON_GetArrayItem(h, 0)) : NULL;
    const char *colon = a ? strrchr(a, ':') : NULL;
    if (!colon || colon == a) {
      rc = err("hostfile '%s': rank %d has no \"host:port\" address", path, r);
      break;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - a), a);
    int e = try_bind(host, colon + 1);
    if (e == EADDRINUSE) rc = err("port of '%s' (rank %d) is in use on this machine", a, r);
    local[r] = e == 0;
  }
  if (!rc) *n = cJSON_GetArraySize(j);
  cJSON_Delete(j);
  return rc;
}

static void emit(rank_proc *p, const char *s, size_t n) {
  printf("[%d] %.*s\n", p->rank, (int)n, s);
}

/* Reads what rank p wrote and prints its complete lines. */
static void drain(rank_proc *p) {
  ssize_t r = read(p->fd, p->buf + p->len, sizeof p->buf - p->len);
  if (r <= 0) {
    if (r < 0 && errno == EINTR) return;
    if (p->len) emit(p, p->buf, p->len);
    p->len = 0;
    close(p->fd);
    p->fd = -1;
    return;
  }
  p->len += (size_t)r;
  size_t start = 0;
  for (size_t i = 0; i < p->len; i++)
    if (p->buf[i] == '\n') {
      emit(p, p->buf + start, i - start);
      start = i + 1;
    }
  if (start == 0 && p->len == sizeof p->buf) start = p->len, emit(p, p->buf, p->len); /* an over-long line */
  memmove(p->buf, p->buf + start, p->len - start);
  p->len -= start;
  fflush(stdout);
}

/* Starts rank `rank` of `world`; ring: hostfile is the ring's; nccl: nccl_port is rank 0's. */
static pid_t spawn(int rank, int world, const char *hostfile, int nccl_port, char **cmd, int *out_fd) {
  int fds[2];
  if (pipe(fds)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    char r[16], w[16];
    snprintf(r, sizeof r, "%d", rank);
    snprintf(w, sizeof w, "%d", world);
    if (nccl_port) {
      char port[16];
      snprintf(port, sizeof port, "%d", nccl_port);
      setenv("NCCL_HOST_IP", "127.0.0.1", 1);
      setenv("NCCL_PORT", port, 1);
      setenv("NCCL_NVLS_ENABLE", "0", 1);
      if (!getenv("CUDA_VISIBLE_DEVICES")) setenv("CUDA_VISIBLE_DEVICES", r, 1); /* as mlx.launch: one GPU per rank */
    } else {
      setenv("MLX_HOSTFILE", hostfile, 1);
    }
    setenv("MLX_RANK", r, 1);
    setenv("MLX_WORLD_SIZE", w, 1);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execvp(cmd[0], cmd);
    fprintf(stderr, "rlx launch: cannot run '%s': %s\n", cmd[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return -1;
  }
  *out_fd = fds[0];
  return pid;
}

static int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

/* Runs the started ranks to completion (see the header for the failure policy). */
static int supervise(rank_proc *p, int n, double grace) {
  int first_fail = -1, left = n;
  double kill_at = 0, term_at = 0;
  while (left > 0) {
    struct pollfd pf[MAX_RANKS];
    int np = 0, idx[MAX_RANKS];
    for (int i = 0; i < n; i++)
      if (p[i].fd >= 0) pf[np] = (struct pollfd){.fd = p[i].fd, .events = POLLIN}, idx[np++] = i;
    if (np) {
      if (poll(pf, (nfds_t)np, 100) > 0)
        for (int k = 0; k < np; k++)
          if (pf[k].revents) drain(&p[idx[k]]);
    } else {
      usleep(20000);
    }
    for (int i = 0; i < n; i++) {
      if (p[i].done || p[i].fd >= 0 || waitpid(p[i].pid, &p[i].status, WNOHANG) != p[i].pid) continue;
      p[i].done = true;
      left--;
      if (exit_code(p[i].status) && first_fail < 0) {
        first_fail = i;
        term_at = now_s() + grace;
      }
    }
    if (first_fail >= 0 && left > 0 && now_s() > term_at) {
      for (int i = 0; i < n; i++)
        if (!p[i].done) kill(p[i].pid, kill_at > 0 && now_s() > kill_at ? SIGKILL : SIGTERM);
      if (kill_at == 0) kill_at = now_s() + 2;
    }
  }
  for (int i = 0; i < n; i++) {
    int s = p[i].status;
    if (WIFSIGNALED(s)) fprintf(stderr, "rlx launch: rank %d was killed by signal %d (%s)\n", p[i].rank, WTERMSIG(s), strsignal(WTERMSIG(s)));
    else if (WEXITSTATUS(s)) fprintf(stderr, "rlx launch: rank %d exited with status %d\n", p[i].rank, WEXITSTATUS(s));
  }
  return first_fail < 0 ? 0 : exit_code(p[first_fail].status);
}

static int launch_mpi(int n, const char *hostfile, char **cmd, int ncmd) {
  char np[16];
  snprintf(np, sizeof np, "%d", n);
  char **argv = calloc((size_t)ncmd + 12, sizeof *argv);
  if (!argv) return err("out of memory");
  int k = 0;
  argv[k++] = "mpirun";
  argv[k++] = "-np";
  argv[k++] = np;
  argv[k++] = "--oversubscribe";
  argv[k++] = "--tag-output";
  if (geteuid() == 0) argv[k++] = "--allow-run-as-root";
  if (hostfile) argv[k++] = "--hostfile", argv[k++] = (char *)hostfile;
  for (int i = 0; i < ncmd; i++) argv[k++] = cmd[i];
  fflush(stdout);
  execvp("mpirun", argv);
  int rc = err("cannot run mpirun (%s; install Debian's openmpi-bin)", strerror(errno));
  free(argv);
  return rc;
}

int rlx_cli_launch(int argc, char **argv) {
  int n = 0, sep = -1;
  const char *backend = "ring", *hostfile = NULL;
  double grace = 30;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      sep = i;
      break;
    }
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return usage();
    char *end;
    if (!strcmp(a, "-n")) {
      long x = strtol(v, &end, 10);
      if (*end || x < 1 || x > MAX_RANKS) return err("-n %s: expected 1 to %d processes", v, MAX_RANKS);
      n = (int)x;
    } else if (!strcmp(a, "--backend")) {
      if (strcmp(v, "ring") && strcmp(v, "mpi") && strcmp(v, "nccl")) return err("unknown backend '%s' (expected ring, mpi or nccl)", v);
      backend = v;
    } else if (!strcmp(a, "--hostfile")) {
      hostfile = v;
    } else if (!strcmp(a, "--grace")) {
      grace = strtod(v, &end);
      if (*end || !(grace >= 0)) return err("--grace %s: expected seconds >= 0", v);
    } else {
      return usage();
    }
    i++;
  }
  if (sep < 0 || sep + 1 >= argc) return usage();
  char **cmd = argv + sep + 1;
  int ncmd = argc - sep - 1;
  if (!strcmp(backend, "mpi")) {
    if (n < 1) return err("--backend mpi needs -n");
    return launch_mpi(n, hostfile, cmd, ncmd);
  }
  bool local[MAX_RANKS];
  char path[512] = "";
  int world = n, nccl_port = 0;
  bool nccl = !strcmp(backend, "nccl");
  if (nccl) {
    if (hostfile) return err("--backend nccl starts the ranks of one host; --hostfile is for ring and mpi");
    if (n < 1) return usage();
    int rc = free_ports(1, &nccl_port);
    if (rc) return rc;
    for (int i = 0; i < n; i++) local[i] = true;
  } else if (hostfile) {
    int rc = read_hostfile(hostfile, &world, local);
    if (rc) return rc;
    if (n && n != world) return err("-n %d does not match the %d ranks of the hostfile", n, world);
    snprintf(path, sizeof path, "%s", hostfile);
  } else {
    if (n < 1) return usage();
    int rc = write_local_hostfile(n, path, sizeof path);
    if (rc) return rc;
    for (int i = 0; i < n; i++) local[i] = true;
  }
  rank_proc *p = calloc((size_t)world, sizeof *p);
  if (!p) return err("out of memory");
  int started = 0, rc = 0;
  for (int r = 0; r < world; r++) {
    if (!local[r]) continue;
    rank_proc *q = &p[started];
    q->rank = r;
    q->pid = spawn(r, world, path, nccl_port, cmd, &q->fd);
    if (q->pid < 0) {
      fprintf(stderr, "rlx launch: cannot start rank %d: %s\n", r, strerror(errno));
      rc = 2;
      break;
    }
    started++;
  }
  if (!started && !rc) rc = err("no rank of the hostfile '%s' has an address on this machine", hostfile);
  for (int i = 0; rc && i < started; i++) kill(p[i].pid, SIGTERM);
  if (started) {
    int s = supervise(p, started, grace);
    rc = rc ? rc : s;
  }
  if (!hostfile && !nccl) unlink(path);
  free(p);
  return rc;
}
