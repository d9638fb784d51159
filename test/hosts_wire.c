/*
 * hosts_wire.c - the wire with latency of test/hosts.sh: a switch in user
 * space that holds every frame for a fixed time before it forwards it.
 *
 *   hosts_wire -d DELAY_US [-q FRAMES] [-P PIDFILE] [-L LOGFILE] NETNS...
 *
 * For each named network namespace (/run/netns/NETNS) it creates a TAP
 * device called eth0 inside that namespace, then detaches into the
 * background (the parent exits once the devices exist; its child's pid goes
 * to PIDFILE) and forwards frames between them: a frame one host sends is
 * delivered to the host owning the destination MAC address (learned from the
 * source addresses seen; broadcasts and unknown destinations go to every
 * other host) DELAY_US after the wire read it.  The kernel of the machine
 * this was written for has no sch_netem, and the other qdiscs it has cannot
 * hold a packet for a fixed time, so the delay is done here.
 *
 * Every frame of every direction goes through one FIFO (all frames wait the
 * same time, so arrival order is departure order): order is preserved.  The
 * FIFO is bounded (-q frames, default 4096, in a byte ring that holds an
 * eighth of that many frames of the largest size): when it is full the
 * wire stops reading, the senders' device queues fill and
 * their kernels drop, as a switch with a full buffer does.  The devices
 * carry TCP segmentation offload frames (virtio-net headers, as a virtual
 * machine's NIC), so bulk transfers move as 64 KiB frames, not 1500-byte
 * ones.  The wire runs at SCHED_FIFO where allowed, with 1 ns timer slack,
 * so that it wakes on time on a machine whose cores are busy.  No bandwidth
 * limit, loss or reordering is modelled.
 *
 * It ends on SIGTERM/SIGINT, or by itself within a second or two of one of
 * the namespace names going away (ip netns del: its TAP device's file holds
 * the namespace, so the wire watches the names); then the namespaces and
 * their devices go away with it (the kernel deletes TAP devices with their
 * namespace: none outlives the hosts, none lands in another namespace).  It
 * writes what it did to LOGFILE: frames, bytes, drops, the longest queue,
 * and how late frames left (the jitter).
 *
 * Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN for setns) and /dev/net/tun.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PORTS 16
#define ETH_ALEN 6
/* a virtio-net header and the largest frame a TSO device hands over */
#define VNET_HDR sizeof(struct virtio_net_hdr)
#define FRAME_MAX (VNET_HDR + 65536 + 256)
#define LATE_BUCKETS 2001          /* lateness histogram: 1 us buckets */

/* One queued frame in the byte ring: header, then len bytes, padded to 16. */
typedef struct {
    uint64_t due_ns;               /* when it leaves */
    uint32_t len;                  /* 0: wrap marker (next record at offset 0) */
    uint16_t port;                 /* where it came in */
    uint16_t pad;
} rec_t;

typedef struct {
    int fd;
    const char *ns;                /* the namespace's name */
    dev_t ns_dev;                  /* and its identity, to see it deleted */
    ino_t ns_ino;
    unsigned char mac[ETH_ALEN];   /* learned source address (valid: known) */
    int known;
} port_t;

static port_t ports[MAX_PORTS];
static int nports;
static unsigned char *ring;
static size_t ring_cap, head, tail;
static long queued, queue_max;
static volatile sig_atomic_t stop;

static struct {
    unsigned long long frames, bytes, flooded, dropped_write, full_waits, max_queued;
    unsigned long long late[LATE_BUCKETS];
    uint64_t late_max_ns;
} st;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static size_t rec_size(uint32_t len)
{
    return sizeof(rec_t) + ((len + 15u) & ~(size_t) 15);
}

static void die(const char *what)
{
    fprintf(stderr, "hosts_wire: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Whether namespace `ns` is still /run/netns/NAME (1), or was deleted (0);
 * with `set`, remember which one it is. */
static int ns_alive(port_t *p, int set)
{
    char path[256];
    struct stat sb;

    snprintf(path, sizeof(path), "/run/netns/%s", p->ns);
    if (stat(path, &sb) != 0) return 0;
    if (set) {
        p->ns_dev = sb.st_dev;
        p->ns_ino = sb.st_ino;
    }
    return sb.st_dev == p->ns_dev && sb.st_ino == p->ns_ino;
}

/* A TAP device named eth0 in network namespace `ns`, non-blocking, with TSO.
 * (Its file holds the namespace: deleting the name does not end it while
 * the wire runs, hence ns_alive.) */
static int make_tap(const char *ns, int home)
{
    char path[256];
    struct ifreq ifr;
    int nsfd, fd;
    unsigned off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;

    snprintf(path, sizeof(path), "/run/netns/%s", ns);
    nsfd = open(path, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0) die(path);
    if (setns(nsfd, CLONE_NEWNET) != 0) die("setns");
    close(nsfd);
    fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) die("/dev/net/tun");
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "eth0");
    if (ioctl(fd, TUNSETIFF, &ifr) != 0) die("TUNSETIFF eth0");
    if (ioctl(fd, TUNSETOFFLOAD, off) != 0) die("TUNSETOFFLOAD");
    if (setns(home, CLONE_NEWNET) != 0) die("setns back");
    return fd;
}

/* Room for one more frame of FRAME_MAX bytes at the tail: 1, or 0 when the
 * ring is full (frames or bytes).  May move the tail to offset 0 (a wrap
 * marker tells the reader). */
static int ring_room(void)
{
    size_t need = rec_size(FRAME_MAX);

    if (queued >= queue_max) return 0;
    if (queued == 0) {
        head = tail = 0;
        return 1;
    }
    if (tail == head) return 0;          /* full to the byte */
    if (tail > head) {
        if (ring_cap - tail >= need) return 1;
        if (head <= need) return 0;      /* the start is still in use */
        ((rec_t *) (ring + tail))->len = 0;
        tail = 0;
        return 1;
    }
    return head - tail > need;
}

static void learn(int port, const unsigned char *frame, size_t len)
{
    if (len < 2 * ETH_ALEN || (frame[ETH_ALEN] & 1)) return;
    memcpy(ports[port].mac, frame + ETH_ALEN, ETH_ALEN);
    ports[port].known = 1;
}

static void send_to(int p, const unsigned char *buf, size_t len)
{
    if (write(ports[p].fd, buf, len) != (ssize_t) len) st.dropped_write++;
}

/* Forward one frame (virtio-net header + Ethernet frame) from port `in`. */
static void forward(int in, const unsigned char *buf, size_t len)
{
    const unsigned char *frame = buf + VNET_HDR;
    int p;

    if (len < VNET_HDR + ETH_ALEN) return;
    if (!(frame[0] & 1)) {
        for (p = 0; p < nports; p++) {
            if (p != in && ports[p].known && !memcmp(ports[p].mac, frame, ETH_ALEN)) {
                send_to(p, buf, len);
                return;
            }
        }
    }
    st.flooded++;
    for (p = 0; p < nports; p++) {
        if (p != in) send_to(p, buf, len);
    }
}

/* Send every queued frame that is due; returns the next due time (0: none). */
static uint64_t deliver(uint64_t now)
{
    while (queued > 0) {
        rec_t *r = (rec_t *) (ring + head);
        if (r->len == 0) {               /* wrap marker */
            head = 0;
            continue;
        }
        if (r->due_ns > now) return r->due_ns;
        uint64_t late = now - r->due_ns;
        st.late[late / 1000 < LATE_BUCKETS - 1 ? late / 1000 : LATE_BUCKETS - 1]++;
        if (late > st.late_max_ns) st.late_max_ns = late;
        forward(r->port, (unsigned char *) (r + 1), r->len);
        head += rec_size(r->len);
        if (head == ring_cap) head = 0;
        queued--;
        now = now_ns();
    }
    return 0;
}

/* Read what port p has, as long as the ring has room: 1 when it stopped on
 * a full ring, 0 when the device is drained, -1 when the device is gone. */
static int take(int p, uint64_t delay_ns)
{
    for (;;) {
        if (!ring_room()) return 1;
        rec_t *r = (rec_t *) (ring + tail);
        ssize_t n = read(ports[p].fd, r + 1, FRAME_MAX);
        if (n < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
        if ((size_t) n <= VNET_HDR) continue;
        r->due_ns = now_ns() + delay_ns;
        r->len = (uint32_t) n;
        r->port = (uint16_t) p;
        learn(p, (unsigned char *) (r + 1) + VNET_HDR, (size_t) n - VNET_HDR);
        tail += rec_size(r->len);
        if (tail == ring_cap) tail = 0;
        queued++;
        st.frames++;
        st.bytes += (size_t) n - VNET_HDR;
        if ((unsigned long long) queued > st.max_queued) st.max_queued = queued;
    }
}

static double late_pct(double q)
{
    unsigned long long total = 0, acc = 0;
    for (int i = 0; i < LATE_BUCKETS; i++) total += st.late[i];
    if (!total) return 0;
    for (int i = 0; i < LATE_BUCKETS; i++) {
        acc += st.late[i];
        if (acc >= q * total) return i;
    }
    return LATE_BUCKETS - 1;
}

static void on_signal(int sig)
{
    (void) sig;
    stop = 1;
}

static void usage(void)
{
    fprintf(stderr, "usage: hosts_wire -d DELAY_US [-q FRAMES] [-P PIDFILE] [-L LOGFILE] "
                    "NETNS...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    double delay_us = -1;
    const char *pidfile = NULL, *logfile = "/dev/null";
    int c, home, rt = 0;
    long qframes = 4096;

    while ((c = getopt(argc, argv, "d:q:P:L:")) != -1) {
        switch (c) {
        case 'd': delay_us = atof(optarg); break;
        case 'q': qframes = atol(optarg); break;
        case 'P': pidfile = optarg; break;
        case 'L': logfile = optarg; break;
        default: usage();
        }
    }
    if (delay_us < 0 || delay_us > 1e6 || qframes < 16 || optind >= argc ||
        argc - optind > MAX_PORTS) usage();
    uint64_t delay_ns = (uint64_t) (delay_us * 1000.0 + 0.5);

    /* a byte ring for qframes frames of at most FRAME_MAX bytes: touched
     * only as far as frames fill it */
    queue_max = qframes;
    ring_cap = ((size_t) qframes / 8 + 2) * rec_size(FRAME_MAX);
    ring = mmap(NULL, ring_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ring == MAP_FAILED) die("mmap");

    home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home < 0) die("/proc/self/ns/net");
    for (int i = optind; i < argc; i++, nports++) {
        ports[nports].ns = argv[i];
        ports[nports].fd = make_tap(argv[i], home);
        ns_alive(&ports[nports], 1);
    }
    close(home);

    /* into the background: the devices exist now, the caller configures them */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid > 0) {
        if (pidfile) {
            FILE *f = fopen(pidfile, "w");
            if (!f) {
                kill(pid, SIGTERM);
                die(pidfile);
            }
            fprintf(f, "%d\n", (int) pid);
            fclose(f);
        }
        return 0;
    }
    setsid();
    int nul = open("/dev/null", O_RDWR), log = open(logfile, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (nul >= 0) {
        dup2(nul, 0);
        dup2(nul, 1);
    }
    if (log >= 0) dup2(log, 2);

    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_TIMERSLACK, 1UL);
    struct sched_param sp = { .sched_priority = 10 };
    if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0) rt = 1;

    /* Timers fire late (in a virtual machine whose cores idle, by a good
     * part of a short delay): sleep until `early` before a frame is due,
     * then poll without sleeping (still reading what arrives) until it is.
     * `early` follows the lateness of the wake-ups, rising fast and falling
     * slowly, so that most frames leave on time at the cost of a short spin. */
    struct pollfd pfd[MAX_PORTS];
    int gone = 0;
    uint64_t t0 = now_ns(), early = 0, checked = t0;
    while (!stop && !gone) {
        uint64_t now = now_ns(), next = deliver(now), asked = 0;
        int room = ring_room(), i;
        struct timespec ts = { 0, 500000000 }, *tsp = &ts;

        if (now - checked >= 1000000000ull) {     /* every second: hosts still up? */
            checked = now;
            for (i = 0; i < nports; i++) gone |= !ns_alive(&ports[i], 0);
        }
        if (next) {
            uint64_t wait = next > now + early ? next - now - early : 0;
            ts.tv_sec = (time_t) (wait / 1000000000ull);
            ts.tv_nsec = (long) (wait % 1000000000ull);
            if (wait) asked = now + wait;
        }
        if (!room) st.full_waits++;
        for (i = 0; i < nports; i++) {
            pfd[i].fd = ports[i].fd;
            pfd[i].events = room ? POLLIN : 0;
            pfd[i].revents = 0;
        }
        int n = ppoll(pfd, (nfds_t) nports, tsp, NULL);
        if (n < 0 && errno != EINTR) die("ppoll");
        if (n == 0 && asked) {
            uint64_t woke = now_ns(), late = woke > asked ? woke - asked : 0;
            if (late > 200000) late = 200000;
            early = late > early ? early + (late - early) / 4 : early - (early - late) / 16;
        }
        for (i = 0; n > 0 && i < nports; i++) {
            if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL)) gone = 1;
            else if ((pfd[i].revents & POLLIN) && take(i, delay_ns) < 0) gone = 1;
        }
    }
    double secs = (now_ns() - t0) / 1e9;
    fprintf(stderr,
            "hosts_wire: %s after %.1f s, delay %.1f us, %d hosts, %s: %llu frames, %llu bytes, "
            "%llu flooded, %llu write drops, queue max %llu frames (bound %ld, full %llu times); "
            "left late by median %.0f us, 99%% %.0f us, 99.9%% %.0f us, max %.0f us\n",
            gone ? "its hosts went away" : "stopped", secs, delay_us, nports,
            rt ? "SCHED_FIFO" : "SCHED_OTHER (no real-time priority)", st.frames, st.bytes,
            st.flooded, st.dropped_write, st.max_queued, queue_max, st.full_waits,
            late_pct(0.5), late_pct(0.99), late_pct(0.999), st.late_max_ns / 1e3);
    return 0;
}
