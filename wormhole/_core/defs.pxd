# cython: language_level=3
"""The kernel's contract: every C struct the event loop works on.

Time is an int64 number of picoseconds, sizes are bytes, rates are bits per
second.  All state lives in one ``Sim`` struct owned by a ``Kernel`` object, so
many simulations can share a process without touching each other.
"""
from libc.stdint cimport int64_t, uint64_t, int32_t, uint32_t, int16_t, uint8_t

cdef extern from "wh_time.h":
    int64_t wh_ns3_seconds_to_ns(double v) nogil
    int64_t wh_tx_time_ps(int64_t nbytes, int64_t bps, int64_t quantum_ps) nogil
    int64_t wh_muldiv(int64_t a, int64_t b, int64_t c) nogil
    uint32_t wh_ecmp_hash3(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t seed) nogil
    uint64_t wh_rng_next(uint64_t* state) nogil
    double wh_rng_uniform(uint64_t* state) nogil
    void wh_prefetch(const void* p) nogil

cdef extern from "wh_ns3rng.h":
    ctypedef struct WhNs3Rng:
        uint64_t base[6]
        uint64_t j1[9]
        uint64_t j2[9]
        uint64_t r1[9]
        uint64_t r2[9]
        int64_t draws
    double wh_ns3_draw(WhNs3Rng* g) nogil

cdef enum:
    NQ = 8              # priority queues per port (as the reference: 8)
    INT_MAX_HOP = 5     # INT hop records carried by one packet
    NO_PKT = -1         # end of a packet FIFO / free list
    ANC_N = 12          # cycle anchors a flow's rate window keeps (FlowWin.anc_*)

cdef enum EventKind:
    EV_TX_DONE = 0      # a = port whose serialisation just finished
    EV_ARRIVE = 1       # a = receiving port, b = packet index
    EV_NIC_WAKE = 2     # a = host port, b = token (stale unless equal to port.wake_token)
    EV_FLOW_START = 3   # a = flow index, b = phase: at phase 2 its queue pair joins its NIC (0 and 1
                        # re-schedule at the same time, as the reference's two start events do)
    EV_USER = 4         # a = user callback id: hand control back to Python
    EV_RTO = 5          # a = flow, b = token: retransmission timer (off unless Params.rto > 0)
    EV_CC_TIMER = 6     # a = flow, b = token * 4 + timer: a timer of the flow's algorithm (its on_timer)
    EV_SAMPLE = 7       # periodic rate / queue sampler (off unless Sim.sample_interval > 0)
    EV_SKIP_END = 8     # a = skip slot, b = token: planned end of a partition's fast-forward
    EV_MSG_NOTE = 9     # a = flow, b = skip's note token: a skipping connection's message ends (virtual time);
                        # a = -1 - slot: a mirror's check at the moment its leader had data posted
                        # b = -1 - token: the receiver gets its last byte (rcv_plan; not counted as an event)
    N_EVENT_KINDS = 10

cdef enum KeyMode:
    KEY_INSERTION = 0   # ties in insertion order (global counter), as the reference: the sequential default
    KEY_LOCAL = 1       # ties by (scheduling time, scheduling node, that node's counter): independent of how
                        # the fabric is partitioned (the partitioned kernel under tie_order='local', parallel.pxi)
    KEY_RANK = 2        # ties by (processing rank of the scheduling event, its own push counter): the order of
                        # KEY_INSERTION rebuilt by logical processes (the partitioned kernel's default, heap.pxd)

cdef enum PktKind:
    PK_DATA = 0
    PK_ACK = 1
    PK_NACK = 2
    PK_PFC = 3

cdef enum CcKind:
    # A flow's congestion-control algorithm: its row of CC_TABLE (cc_table.pxi), whose
    # name is the algorithm's name in the registry (wormhole.cc.REGISTRY)
    CC_NONE = 0         # fixed rate: line rate, window = BDP
    CC_DCQCN = 1
    CC_HPCC = 2
    CC_TIMELY = 3
    CC_DCTCP = 4
    CC_SWIFT = 5        # delay-based window (not an algorithm of the reference)
    CC_TCP = 6          # loss-based window, NewReno (not an algorithm of the reference)
    CC_CUBIC = 7        # loss-based window, CUBIC (Linux's default; not an algorithm of the reference)
    N_CC_KINDS = 8      # rows of CC_TABLE (at most 8: Sim.cc_st)

cdef enum CcTimer:
    # DCQCN's timers (EV_CC_TIMER's b & 3; another algorithm numbers its own)
    TM_ALPHA = 0        # DCQCN alpha update (every alpha_interval)
    TM_DECREASE = 1     # DCQCN rate-decrease check (every decrease_interval)
    TM_INCREASE = 2     # DCQCN rate-increase timer (every rp_timer, armed after the first cut)

cdef enum IntMode:
    INT_NONE = 0        # no INT header (DCQCN, DCTCP, fixed rate)
    INT_TS = 1          # 8-byte sender timestamp (TIMELY)
    INT_HOPS = 2        # 5 hop records + count, 42 bytes (HPCC)

cdef enum RunCode:
    RUN_IDLE = 0        # no event left before `until`
    RUN_CALLBACKS = 1   # flows with Python callbacks completed
    RUN_USER = 2        # a user event is due
    RUN_LIMIT = 3       # the memory limit on packets was hit

ctypedef struct Event:
    int64_t t           # firing time, ps
    int64_t ts          # tie key, part 1: 0 under KEY_INSERTION; the time it was scheduled under KEY_LOCAL;
                        # KEY_RANK: the scheduling event's rank (>= 0) or -1 - its slot in Sim.rank_val
    uint64_t seq        # tie key, part 2: insertion number (KEY_INSERTION: ties fire in scheduling order);
                        # KEY_LOCAL: scheduling node << 40 | that node's push counter; KEY_RANK: the
                        # scheduling event's own push counter (see heap.pxd)
    int32_t kind        # EventKind
    int32_t a           # first argument (port, flow or callback id)
    int64_t b           # second argument (packet index, token)

ctypedef struct IntHop:
    # One INT hop record as carried on the wire by the reference (packed fields
    # that wrap): the consumer takes differences modulo the field width.
    uint32_t time       # switch clock at egress dequeue in ns, modulo 2^24
    uint32_t bytes      # port's transmitted bytes before this packet / (128 * int_multi), modulo 2^20
    uint32_t qlen       # port's queued bytes after the dequeue / (80 * int_multi), modulo 2^17
    uint32_t _pad
    int64_t rate_bps    # port line rate

ctypedef struct Packet:
    int32_t next        # next packet in the same FIFO or in the free list
    int32_t flow        # flow index (-1 for PFC frames)
    int32_t size        # bytes on the wire, headers included
    int32_t payload     # payload bytes (data packets)
    int64_t seq         # data: first payload byte; ACK/NACK: receiver's next expected byte
    int64_t ts          # sender clock when the packet was built, ps (TIMELY RTT)
    int32_t in_port     # ingress port at the switch that buffers it (MMU accounting)
    int16_t hop         # index in the flow's path of the port that transmits it next
    uint8_t kind        # PktKind
    uint8_t qidx        # priority group (data/ACK) or the queue a PFC frame (un)pauses
    uint8_t ecn         # data: CE mark; ACK: congestion echo (CNP flag)
    uint8_t pfc_pause   # PFC frame: 1 = pause, 0 = resume
    uint8_t nhop        # INT hop records written so far
    uint8_t _pad
    int32_t draw        # a logical process deferring ECN draws: 1 + its latest pending draw of the round in
                        # Sim.draws (0: none; see parallel.pxi)
    int64_t arr_t       # on a wire behind another packet of its port: arrival time at the peer, ps
    uint64_t arr_seq    # and the tie key (arr_ts, arr_seq) its arrival event was given when it was sent
    int64_t arr_ts

ctypedef struct Port:
    int32_t node        # node that owns this port
    int32_t peer        # the port at the other end of the link
    int32_t ifindex     # device index on its node (ns-3 numbering, from 1)
    int64_t rate_bps    # line rate
    int64_t delay_ps    # propagation delay to the peer
    double error_rate   # probability that an arriving packet is corrupted
    uint8_t busy        # 1 while a packet is being serialised (see port_busy in kernel.pyx)
    uint8_t tx_lazy     # busy: its transmission-done is not in the heap (it would find nothing to send)
    uint8_t tx_ctrl     # busy: the packet being serialised is a control packet (ACK, NACK, PFC)
    int64_t tx_end      # busy: end of the serialisation, ps
    uint64_t tx_seq     # busy: tie key (tx_ts, tx_seq) of its transmission-done event, scheduled or not
    int64_t tx_ts
    uint8_t paused[8]   # queues paused by PFC frames received on this port
    int32_t qhead[8]    # FIFO heads per queue (hosts: queue 0 is the ACK queue)
    int32_t qtail[8]    # FIFO tails per queue
    int64_t qbytes[8]   # queued bytes per queue
    int64_t qbytes_total  # queued bytes over all queues
    int32_t rrlast      # round-robin position (switch: queue; host: QP slot)
    int64_t tx_bytes    # cumulative bytes transmitted (INT txBytes)
    int64_t tx_packets  # cumulative packets transmitted
    int64_t skip_tx     # bytes tx_bytes advanced in the fast-forward being applied (scratch: the INT
                        # records stamped here before it move by as much, int_hops.pxd)
    int64_t wake_t      # host: time of the pending NIC wake-up, -1 if none
    int64_t wake_token  # host: token of the pending wake-up (stale events ignored)
    uint64_t wake_seq   # host: tie key (wake_ts, wake_seq) of the pending wake-up, scheduled or not
    int64_t wake_ts
    uint8_t wake_lazy   # host: the pending wake-up is not in the heap (it would find nothing to send)
    int32_t wakes_pending  # host: wake-ups since the NIC last sent a data packet
    double wake_per_pkt    # host: recent wake-ups per data packet (the mean of the first 1024 samples,
                           # then an exponential mean over ~1024); a fast-forward counts the wake-ups
                           # its skipped packets would have cost
    int64_t wake_samples   # host: data packets sent (samples of wake_per_pkt)
    double txd_per_pkt     # recent transmission-done events per packet sent (averaged as wake_per_pkt,
                           # over txd_samples): the rest ended unscheduled; a fast-forward counts them likewise
    int64_t ev_done     # events processed on this port's behalf: its transmission ends, a NIC's wake-ups,
                        # arrivals over its link at the far end (run_loop); every event of a packet's
                        # hop lands on the hop's egress port, so a flow's events are on its paths' ports
    double ev_skipped   # events a fast-forward counted as skipped on this port's behalf (_count_packets,
                        # a mirror's end: _mirror_count)
    double ev_mark      # a mirror's port: its twin port's ev_done + ev_skipped when the mirror began
                        # following it (-1: none; accel_mirror.pxi _mirror_mark)
    int32_t wire_head   # packets on the link whose arrival is not in the heap yet, in arrival order
    int32_t wire_tail   # (linked by Packet.next): each enters the heap when the one ahead arrives
    int32_t wire_heap   # this port's arrivals in the heap (at most one unless a fast-forward flushed
                        # the wire or the calendar is on: then every arrival is pushed when sent, kernel.pyx)
    int32_t* qps        # host: queue pairs attached to this NIC, in arrival order
    int32_t nqps        # host: number of entries in qps
    int32_t cap_qps     # host: capacity of qps
    int64_t txd_samples # samples of txd_per_pkt since the port's epoch (a flow through it joined, left, went
                        # idle or resumed: accel epoch_near), so that its mean is over the traffic a skip
                        # carries on, not the traffic before it
    uint8_t _pad_line[8]   # (384 bytes, and the array 64-byte aligned: a link's two ports are adjacent in it
                        # and may be two threads' (parallel.pxi), so neither shares a cache line with the other)

ctypedef struct MmuPort:
    int64_t ingress[8]  # bytes admitted per ingress queue (reserve + shared)
    int64_t hdrm[8]     # bytes held in headroom per ingress queue
    int64_t egress[8]   # bytes queued per egress queue (ECN marking)
    uint8_t pause_sent[8]  # PFC pause sent upstream and not yet resumed
    int64_t headroom    # headroom per ingress queue: 3 x rate x delay
    int32_t pfc_shift   # dynamic threshold = free shared space >> pfc_shift
    int64_t kmin        # ECN: no mark at or below (bytes)
    int64_t kmax        # ECN: always mark above (bytes)
    double pmax         # ECN: mark probability at kmax
    uint8_t _pad_line[16]  # (256 bytes, the array 64-byte aligned: as Port's)

ctypedef struct SwitchState:
    int64_t buffer      # shared buffer size (bytes)
    int64_t shared_used # bytes in the shared pool
    int64_t total_hdrm  # sum of the ports' headroom
    int64_t total_rsrv  # sum of the ports' reserve
    int64_t used        # bytes buffered now (all ingress queues)
    uint8_t _pad_line[24]  # (64 bytes, the array 64-byte aligned: two switches may be two threads')

ctypedef struct Flow:
    # 256 bytes, the array 64-byte aligned (FLOW_ALIGN): the first three cache lines are set when the
    # flow is made or written by its sender's node, the last by its receiver's alone, so that with
    # threads (parallel.pxi) the two ends' processes never write one line
    int32_t src         # sending host node
    int32_t dst         # receiving host node
    int32_t src_port    # sender's NIC port
    int32_t dst_port    # receiver's NIC port
    int32_t sport       # UDP source port (reference numbering from 10000 per host pair)
    int32_t dport       # UDP destination port
    int32_t pg          # priority group
    int32_t path_off    # forward egress ports in Sim.paths (NIC port first)
    int32_t path_len    # number of forward egress ports
    int32_t rpath_off   # reverse (ACK) egress ports in Sim.paths
    int32_t rpath_len   # number of reverse egress ports
    int32_t last_pkt_size  # size of the last data packet sent (pacing)
    int64_t size        # bytes to deliver
    int64_t start       # start time, ps
    int64_t finish      # time the last ACK arrived, ps; -1 while running
    int64_t snd_nxt     # next byte to send
    int64_t snd_una     # first unacknowledged byte
    int64_t win         # window in bytes, 0 = unlimited
    int64_t base_rtt    # base RTT used by CC, ps
    int64_t rate        # current sending rate, bps
    int64_t max_rate    # NIC line rate, bps
    int64_t next_avail  # pacing: earliest time of the next data packet, ps
    int64_t retx_bytes  # sender: bytes sent again after go-back-N
    int64_t max_sent    # sender: highest byte ever sent
    int64_t rto_mark    # sender: snd_una when the retransmission timer was armed
    int64_t rto_token   # sender: token of the armed timer (stale events ignored)
    int64_t msg_end     # connection: end offset of the oldest unreported message, -1 if none
    int64_t skip_shift  # bytes the flow advances in the fast-forward being applied (scratch)
    uint8_t rto_armed   # sender: 1 while a retransmission timer is pending
    uint8_t started     # 1 once the QP joined its NIC
    uint8_t has_cb      # 1 if Python wants a completion callback
    uint8_t var_win     # window scales with rate / max_rate
    uint8_t cc          # CcKind: the flow's algorithm (its row of CC_TABLE, its state in Sim.cc_st[cc])
    uint8_t persistent  # a connection: messages are appended, it never finishes
    uint8_t on_nic      # 1 while listed in its NIC's queue pairs
    uint8_t rcv_cb      # 1 if Python wants a delivery callback (connections always report)
    uint8_t _pad_snd[8]  # (the receiver's line starts at byte 192)
    int64_t rcv_nxt     # receiver: next expected byte
    int64_t milestone   # receiver: ACK milestone
    int64_t nack_timer  # receiver: no NACK before this time unless the gap moved, ps
    int64_t last_nack   # receiver: sequence of the last NACK
    int64_t rcv_bytes   # receiver: payload bytes received, duplicates included
    int64_t rcv_end     # receiver: report when rcv_nxt reaches this offset (a flow's size, a connection's
                        # oldest undelivered message end), -1 if none
    int64_t delivered   # receiver: time rcv_nxt last reached rcv_end (a flow: its last byte arrived), -1
    uint8_t _pad_rcv[8]  # (256 bytes in all)

ctypedef struct CcParams:
    int32_t kind        # CcKind of the flows added without one (the configuration's cc)
    int64_t min_rate    # lowest rate, bps
    int64_t rai         # additive increase, bps
    int64_t rhai        # hyper additive increase, bps
    int64_t dctcp_rai   # DCTCP additive increase per RTT, bps
    double g            # EWMA gain (DCQCN alpha, DCTCP alpha)
    double rate_on_first_cnp  # DCQCN: Rc multiplier at the first CNP
    uint8_t clamp_target   # DCQCN: Rt = Rc on every cut
    uint8_t fast_react  # HPCC: react on every ACK without committing Rc
    uint8_t multi_rate  # HPCC: per-hop Rc and stage, rate = min over hops
    uint8_t sample_feedback  # HPCC: fast react ignores hops with an empty queue
    int32_t fast_recovery_times  # DCQCN: stages of fast recovery
    int32_t mi_thresh   # HPCC: additive stages before a multiplicative one
    int32_t int_multi   # INT unit multiplier (bytes 128 x, qlen 80 x)
    int64_t t_alpha     # DCQCN alpha update period, ps
    int64_t t_decrease  # DCQCN rate-decrease check period, ps
    int64_t t_increase  # DCQCN rate-increase timer, ps
    double u_target     # HPCC eta
    double tmly_alpha   # TIMELY EWMA weight of the RTT difference
    double tmly_beta    # TIMELY multiplicative decrease factor
    int64_t tmly_tlow   # TIMELY: increase below this RTT, ns
    int64_t tmly_thigh  # TIMELY: decrease above this RTT, ns
    int64_t tmly_min_rtt   # TIMELY: gradient normaliser, ns
    int64_t mtu         # payload bytes per packet (DCTCP batch size, Swift's packet)
    int64_t sw_base_target  # Swift: base target delay, ps
    int64_t sw_hop_scale    # Swift: target delay added per switch on the forward path, ps
    double sw_fs_range  # Swift: the flow-scaling term is clamped to [0, fs_range], ps
    double sw_fs_alpha  # Swift: flow-scaling alpha, ps x sqrt(packets): fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd))
    double sw_fs_beta   # Swift: flow-scaling beta, ps: -alpha / sqrt(fs_max_cwnd)
    double sw_ai        # Swift: additive increase, packets per RTT
    double sw_beta      # Swift: multiplicative decrease factor per unit of relative excess delay
    double sw_max_mdf   # Swift: largest multiplicative decrease (the window keeps at least 1 - max_mdf)
    double sw_min_cwnd  # Swift: smallest window, packets
    double sw_max_cwnd  # Swift: largest window, packets
    double sw_init_cwnd # Swift: initial window, packets (0: the flow's bandwidth-delay product)
    int32_t sw_retx_reset  # Swift: retransmission timeouts in a row that reset the window to min_cwnd
    double tcp_init_cwnd   # TCP (NewReno, CUBIC): initial window, packets of mtu payload bytes
    double tcp_min_ssthresh  # TCP: smallest slow-start threshold after a loss, packets
    double tcp_max_cwnd    # TCP: largest window, packets (the send buffer's bound on bytes in flight)
    double tcp_beta        # NewReno: window kept on a loss (ssthresh = beta x cwnd)
    double cubic_beta      # CUBIC: window kept on a loss
    double cubic_c         # CUBIC: scaling constant C of W(t) = C (t - K)^3 + W_max, packets / s^3
    int64_t tcp_pto_min    # TCP: smallest probe timeout (tail-loss probe), ps
    int64_t tcp_rto_min    # TCP: smallest retransmission timeout of the algorithm's own loss timer, ps

ctypedef struct DcqcnState:
    double alpha        # congestion estimate
    int64_t target_rate # Rt, bps
    int32_t rp_stage    # increase events since the last cut
    uint8_t first_cnp   # no CNP seen yet
    uint8_t alpha_cnp   # a CNP arrived since the last alpha update
    uint8_t dec_cnp     # a CNP arrived since the last decrease check
    uint8_t _pad
    int64_t tok[3]      # token of the pending timer per CcTimer (stale events ignored)

ctypedef struct HpccState:
    int64_t last_update_seq  # snd_nxt at the last full update (once per RTT)
    int64_t cur_rate    # Rc, committed by full updates only, bps
    int32_t inc_stage   # additive stages since the last multiplicative one
    int32_t _pad
    double u            # EWMA of the normalised inflight U
    IntHop hop[5]       # previous INT record per hop
    double hop_u[5]     # per-hop U (MULTI_RATE)
    int64_t hop_rc[5]   # per-hop Rc (MULTI_RATE), bps
    int32_t hop_inc[5]  # per-hop stage (MULTI_RATE)

ctypedef struct TimelyState:
    int64_t last_update_seq  # snd_nxt at the last update (once per RTT)
    int64_t cur_rate    # committed rate, bps
    int32_t inc_stage   # consecutive increases (HAI after 5)
    int32_t _pad
    int64_t last_rtt    # RTT of the last update, ns
    double rtt_diff     # EWMA of RTT differences, ns

ctypedef struct DctcpState:
    int64_t last_update_seq  # snd_nxt at the last alpha update (once per RTT)
    int64_t high_seq    # CWR ends when an ACK passes this
    int64_t ecn_cnt     # ECN-echo ACKs in the current batch
    int64_t batch       # packets in the current batch
    double alpha        # fraction of marked packets, EWMA
    uint8_t ca_state    # 1 while in CWR

ctypedef struct SwiftState:
    double cwnd         # congestion window, packets of mtu payload bytes (below 1: paced, see pace_gap)
    int64_t srtt        # smoothed RTT (EWMA 1/8 of the ACKs' delays), ps; 0 before the first ACK
    int64_t delay       # delay of the last ACK: now - send time of the packet it acknowledges, ps
    double target       # target delay at the last ACK, ps
    int64_t last_decrease  # time of the last window decrease, ps (a decrease needs srtt since it)
    int64_t last_acked  # highest cumulative ACK seen, bytes
    int64_t pace_gap    # below one packet of window: time between two packets (srtt / cwnd), ps; else 0
    int32_t retx_cnt    # retransmission timeouts since the last ACK
    int32_t hops        # switches on the forward path (hop-scaling term of the target)

ctypedef struct TcpState:
    # NewReno and CUBIC (cc_tcp.pxd); the CUBIC fields are unused by NewReno
    double cwnd         # congestion window, packets of mtu payload bytes (at least 1)
    double ssthresh     # slow-start threshold, packets (tcp_max_cwnd until the first loss)
    int64_t last_acked  # highest cumulative ACK seen, bytes
    int64_t last_reduce # time of the last window reduction, ps: a loss signal within srtt of it is of the same
                        # window (no second reduction); -2^62 before the first
    int64_t srtt        # smoothed RTT (EWMA 1/8 of the echoed timestamps' RTTs), ps; 0 before the first ACK
    int64_t epoch_start # CUBIC: time the current growth epoch began (first ACK after a reduction), ps; -1 none
    double w_max        # CUBIC: window before the last reduction (after fast convergence), packets
    double k            # CUBIC: time from the epoch's start until W(t) is back at w_max, ps
    double w_est        # CUBIC: the Reno-friendly window estimate of the epoch, packets
    int64_t rttvar      # RTT variation (RFC 6298: EWMA 1/4 of |srtt - rtt|), ps
    int64_t last_progress  # time snd_una last moved (or the last probe or timeout), ps
    int64_t probe_tok   # token of the pending loss timer (EV_CC_TIMER b = tok * 4; stale events ignored)
    int32_t losses      # window reductions on a NACK
    int32_t timeouts    # retransmission timeouts
    int32_t probes      # probe timeouts that went back to snd_una
    int32_t backoff     # retransmission timeouts in a row (each doubles the timeout; at most 6)
    uint8_t probe_armed # 1 while a loss timer is pending
    uint8_t probed      # 1 once the probe timeout fired without progress since (the next is an RTO)

ctypedef struct FlowWin:
    # Sliding window of a flow's last `l` rate samples (one per ACK) with
    # monotonic deques, so that max, min and mean cost O(1) per sample.  Each ring
    # holds Accel.lmask + 1 >= l entries; sample number k (and a deque's position k)
    # is in slot k & Accel.lmask.
    int64_t n           # samples taken so far
    int64_t sum         # sum of the rates in the window
    int64_t hsum        # sum of the newer half of them (the last l // 2 samples)
    int64_t* val        # ring of the last rates (bps): the window is the last l of them
    int64_t* t          # ring of their sample times (ps)
    int64_t* una        # ring of snd_una at each sample
    int64_t* qmax       # deque of sample numbers with decreasing rates (a ring)
    int64_t* qmin       # deque of sample numbers with increasing rates (a ring)
    int64_t* idl        # ring of the flow's cumulative idle time at each sample (ps)
    int64_t idle_total  # time spent idle (a connection with nothing to send), ps
    int64_t idle_since  # start of the current idle period, -1 while sending
    int64_t maxh        # head of qmax (sample count based positions)
    int64_t maxt        # tail of qmax
    int64_t minh        # head of qmin
    int64_t mint        # tail of qmin
    uint8_t steady      # (max - min) / mean < theta over a full window, or its goodput is (gp_steady)
    uint8_t gp_steady   # the goodputs of the window's four quarters agree within theta of their mean
                        # (rates that oscillate around a share, e.g. a sawtooth, with a steady throughput)
    int64_t act_t       # time the flow last went from idle to sending, ps
    int64_t act_una     # snd_una at that moment
    int64_t act_n       # samples taken before that moment
    int64_t act_idl     # idle_total at that moment
    int64_t need        # fresh samples required after act_n before the flow may be fast-forwarded
    int64_t last_dec    # number of the last sample lower than the one before it (-1: none)
    int64_t ep_t        # goodput is measured from no earlier than this: the last time a flow sharing one of
                        # this flow's ports (or the flow itself) joined, left, went idle or resumed, ps
    int64_t gap         # length of the connection's last idle spell (idle until data was posted again), ps;
                        # -1 if it has had none since its window opened
    # cycle anchors (accel_onoff.pxi): the flow's (time, snd_una, idle total) each time a connection
    # sharing one of its ports (or itself) resumed after an idle spell, and which one; a ring of ANC_N
    int64_t anc_t[ANC_N]
    int64_t anc_u[ANC_N]
    int64_t anc_i[ANC_N]
    int32_t anc_c[ANC_N]
    int64_t anc_n       # anchors taken since the window opened

ctypedef struct Skip:
    # One partition's fast-forward in progress.
    int32_t part        # partition being skipped (-1: slot free)
    int64_t t0          # time the skip began, ps
    int64_t t1          # planned end (next interrupt), ps
    int64_t token       # token of the pending EV_SKIP_END
    int64_t note_token  # token of this skip's EV_MSG_NOTE events (skips_started when it began)
    int64_t t_limit     # a known flow start on the partition's ports: the skip cannot extend past it
    Event* ev           # the partition's events, taken out of the heap
    int64_t n_ev        # events held
    int64_t cap_ev      # capacity of ev
    int32_t* flows      # the partition's flows at the start
    double* goodput     # each flow's steady goodput, bytes per ps
    int32_t n_flows     # flows held
    int32_t cap_flows   # capacity of flows / goodput
    uint8_t memo        # 1: a memoized convergence being applied
    double* memo_cc     # per flow: rate and 3 algorithm values to set when it completes
    double* memo_gp     # per flow: the steady goodput that follows the convergence, bytes per ps
                        # (a regular skip at these goodputs starts when the convergence ends)
    uint8_t mirror      # 1: the partition mirrors a twin that formed at the same moment in the
                        # same state and is simulated in its place (memo: the twin's convergence)
    int32_t lead_part   # the twin (leader) partition
    int32_t lead_ver    # its version when the mirror began
    int32_t* lead_flows # per flow: the leader's flow it mirrors (-1: none, an idle connection)
    int64_t* lead_una0  # per flow: that flow's snd_una when the mirror began
    int64_t* lead_rcv0  # per flow: that flow's rcv_nxt when the mirror began
    uint8_t parted      # 1: ended because the leader changed (not a skip-back)
    int32_t wait_posts  # a mirror: data posted to the leader's connections that its own have not had
                        # yet (the workload posts to both at the same moment; checked then, at
                        # an EV_MSG_NOTE with a = -1 - slot, b = token); below 0: posts its own
                        # took ahead of the leader's at this moment (checked the same way)
    int32_t* join_lead  # a mirror: leader's flows that joined its partition at this moment whose twins
                        # have not joined the mirror's yet (mirror_admit; checked as wait_posts is)
    int32_t n_join      # how many (0 outside that moment)
    int32_t cap_join    # capacity of join_lead
    uint8_t follow      # 1: a steady skip at the stored goodputs right after a memo replay
    uint8_t has_onoff   # 1: some flows are on/off members (a steady skip's; memo replays and mirrors have none)
    uint8_t* onoff      # per flow: 1 if it may run out of data and resume inside the skip (no other flow
                        # of the partition sends data through a port of its data path: its idle spells
                        # change no other flow's bottleneck)
    int64_t* run_t      # per flow (on/off): when its current run of sending began (the skip's start, or the
                        # post that resumed it after it had moved all its posted data), ps
    int64_t* run_b      # per flow (on/off): bytes acknowledged in the skip when that run began
    int64_t* run_r      # per flow (on/off): bytes delivered to its receiver in the skip when that run began
    int64_t* dry_lim    # per flow (on/off): how long it may stay out of data in the skip: how long it was idle
                        # in its own last cycle before the skip (cycle_idle), the cycle its neighbours were
                        # measured in
    double* cyc_g       # per flow (on/off): its goodput over its own last cycle (cycle_goodput), the rate of
                        # every run begun in the skip; the run under way when the skip began moves at the pace
                        # that ends it when that cycle's run would have (_first_run_rate), in goodput
    int32_t cap_oo      # capacity of onoff / run_t / run_b / run_r / dry_lim / cyc_g

ctypedef struct Accel:
    # The accelerator's state (module wormhole._core.accel, contract accel.pxd); the kernel
    # reads it only through accel.pxd's inline queries (port_frozen) and its statistics.
    uint8_t on          # accelerator enabled
    const KernelOps* k  # the kernel's services the accelerator calls (set by accel_setup)
    int32_t l           # samples per window
    int64_t lmask       # the windows' rings hold lmask + 1 samples (the least power of two >= l): sample
                        # number k is in slot k & lmask (a mask, not a division, on every ACK)
    double theta        # steady when (max - min) / mean < theta
    int64_t min_skip    # skip only if the next interrupt is at least this far, ps
    int64_t margin      # bytes each flow still simulates before an interrupt
    int32_t check_every # re-check a steady flow's partition every this many samples
    FlowWin* win        # per flow (allocated when the flow becomes active)
    int32_t* part_of    # per flow: its partition, -1 while inactive
    uint8_t* active     # per flow: counted in a partition
    int32_t* port_part  # per port: partition of the flows using it, -1 if none
    int32_t** port_flows  # per port: active flows using it (data or ACK direction)
    int32_t* port_nf    # per port: entries in port_flows
    int32_t* port_cap   # per port: capacity of port_flows
    int32_t** part_flows  # per partition: its flows
    int32_t* part_nf    # per partition: flows
    int32_t* part_cap   # per partition: capacity
    int32_t* part_skip  # per partition: skip slot, -1 if not skipping
    uint8_t* part_dirty # per partition: a flow left, split check pending
    int32_t* part_ver   # per partition: membership version (memo notices carry it)
    uint8_t* part_watch # per partition: report when it first becomes steady (memo miss)
    int64_t* part_why   # per partition: (its part_ver << 8) | the test that last refused a skip of it
                        # (REJECT_NAMES index); another version than part_ver's: untried since its last change
    uint8_t memo        # report partition formations for memoization
    int64_t* mnotes     # memo notices: rows (kind 0 formed / 1 steady, partition, version)
    int32_t n_mnotes    # rows used
    int32_t mnotes_cap  # rows allocated
    int64_t** pool      # recycled window buffers (6 * (lmask + 1) int64 each)
    int32_t n_pool      # buffers in the pool
    int32_t pool_cap    # capacity of pool
    int32_t n_parts     # partition slots in use (some may be empty)
    int32_t parts_cap   # partition slots allocated
    int32_t* free_parts # recycled partition ids
    int32_t n_free      # entries in free_parts
    uint8_t waking      # 1 between conn_wake and the part_activate that joins the connection again
    Skip* skips         # skip slots
    int32_t n_skips     # slots allocated
    int32_t* scratch    # BFS scratch (flows)
    int32_t scratch_cap
    double* gp          # goodput scratch of skip_try / a memo skip's follow-on (per partition flow)
    int32_t gp_cap      # capacity of gp
    uint8_t* oo         # on/off scratch of skip_try (per partition flow, capacity gp_cap): 1 if the flow may
                        # idle and resume inside the skip (_onoff_member)
    int64_t* lim        # dry limit scratch of _onoff_mark (per partition flow, capacity gp_cap): cycle_idle
    double* cg          # cycle goodput scratch of _onoff_mark (per partition flow, capacity gp_cap)
    uint8_t onoff       # steady skips carry on/off members through their idle spells (config steady_onoff)
    uint8_t cycle       # an on/off connection whose own last two cycles agree may join a skip with its rate
                        # window or its window goodput unsteady, as an on/off member at its cycle goodput
                        # (config steady_cycle, and steady_onoff)
    uint8_t* cm         # skip_try scratch (per partition flow, capacity gp_cap): 1 if the flow joins by its
                        # cycle (set and read only with cycle)
    int64_t onoff_resumes  # on/off members that resumed inside a skip after moving all their posted data
    int64_t onoff_flows    # on/off members of the steady skips begun
    int64_t onoff_tests    # skip attempts of partitions whose flows own their data paths, with a connection seen idle
    int64_t onoff_no_cycle # ... refused on/off members: a sending flow without three anchors of one connection's resumes
    int64_t onoff_unsteady # ... refused on/off members: a sending flow's last two cycles' goodputs differ by more than theta
    int64_t onoff_cycle    # on/off members that joined by their own steady cycles, their rate windows unsteady (steady_cycle)
    uint8_t* mark       # per flow BFS mark
    int32_t flow_cap    # capacity of the per-flow arrays
    # statistics
    int64_t events_skipped   # events a full run would have processed in the skipped time
    int64_t skips_started    # fast-forwards begun
    int64_t skip_backs       # fast-forwards ended early by an unplanned event
    int64_t skip_extends     # fast-forwards made longer by data posted to a connection sending through them
    int64_t time_skipped     # sum over skips of the skipped time, ps
    int64_t bytes_skipped    # payload bytes advanced without packets
    int64_t steady_periods   # flows becoming steady
    int64_t merges           # partition merges
    int64_t splits           # partition split checks
    int64_t memo_applied     # memoized convergences applied
    int64_t memo_follows     # steady skips begun as soon as a memoized convergence ended
    int64_t mirrors          # partitions that mirrored a simulated twin
    int64_t mirrors_done     # mirrors that lasted until their twin converged
    int64_t mirror_follows   # leader's message ends a mirror followed (its own reported at that moment)
    int64_t mirrors_quiet    # mirrors that ended with their twin quiescent (everything acknowledged):
                             # exact, in the twin's final state (accel_mirror.pxi mirror_quiet_end)
    int32_t n_mirroring      # mirrors in progress
    int64_t mirror_parts_by[12] # mirrors that parted from their leader, by cause (PARTED_BY in accel.pyx)
    int32_t join_why         # the cause mirrors_end_but counts (PARTED_BY index)
    int64_t mirror_joins     # flows that joined a mirror as the twins of flows joining its leader
    int64_t rejects[16]      # partitions not fast-forwarded, by the test that blocked them (REJECT_NAMES in
                             # kernel.pyx: pause, rate spread, goodput halves, no room, horizon, split check, ...)
    int64_t rej_flows        # sum over rejected tries of the partition's flow count
    int64_t rej_tested       # sum over tries refused by one flow's own test (skip_try) of the partition's
                             # sending flows ...
    int64_t rej_steady       # ... and of those flows the ones whose rate window was steady
    int64_t rej_one_short    # tries refused by one flow's own test while every other sending flow's
                             # window was steady (a partition that all but agrees)
    int64_t skip_flows       # sum over steady skips begun of the partition's flow count
    int64_t skipped_by[4]    # events_skipped by source: steady skip, memo replay, steady skip following a
                             # memo replay, mirror of a twin
    int64_t acks_by[24]      # ACKs simulated (each acknowledges a packet that was not skipped), by why the
                             # flow's partition was not fast-forwarding then (ACKS_BY in accel.pyx: the flow
                             # keeps no window, or its own window, or its partition's last refusal since it
                             # changed)
    int64_t backs_by[4]      # skip-backs by cause: a flow starts on the partition's ports, data posted to an
                             # idle connection of it, (planned ends) a DCQCN rate increase, other
    int32_t back_why         # cause of the skip-back under way (index of backs_by)
    int32_t gp_why           # why the last steady-goodput measurement gave none (index of rejects)
    uint8_t quarters         # also call a flow steady when its window's quarter goodputs agree: 0 never, 1 a
                             # flow whose data shares no port with another flow's data (steady_goodput_alone),
                             # 2 every flow (steady_goodput)
    uint8_t committed        # the window samples CcOps.steady_rate (the rate the control loop commits, HPCC's
                             # Rc) instead of send_rate (steady_committed)
    int64_t gp_span          # ... provided its window spans at least this long (8 periods of the CC's
                             # slowest control loop, from the CC registry), ps

ctypedef struct PfcRecord:
    int64_t t           # time, ps
    int32_t node        # node that received the frame
    int32_t is_switch   # node type (1 switch, 0 host)
    int32_t ifindex     # device index on that node
    int32_t pause       # 1 pause, 0 resume
    int64_t ts          # tie key (ts, seq) of the arrival event that logged it (a partitioned run merges
    uint64_t seq        # its logical processes' logs in that order; KEY_RANK: ts = that event's rank)

ctypedef struct DrawRec:
    # A random draw a logical process defers (draws.pxd): its place in the run's one stream is the
    # processing rank of the event that made it, known when its round is ranked (parallel.pxi)
    int64_t ref         # -1 - the slot of the event that drew (Event.ts under KEY_RANK)
    double p            # mark probability of its packet (< 0: a draw whose value nothing reads, a PFC frame's)
    int32_t pk          # the packet it may mark, in the process's pool (-1: none, freed, or sent over a cut)
    int32_t prev        # the packet's previous pending draw of the round (-1: none)
    int32_t xlp         # the packet left over a cut link: the receiving process (-1: it did not)
    int64_t xk          # and its entry in the outbox to that process

ctypedef struct Params:
    int64_t mtu         # payload bytes per packet
    int32_t hdr_bytes   # data header bytes (48 + INT)
    int32_t ack_bytes   # ACK/NACK bytes on the wire
    int32_t pfc_bytes   # PFC frame bytes
    int32_t int_mode    # IntMode
    int32_t ack_qidx    # host: queue index whose pause blocks ACKs (0 high prio, else 3)
    uint8_t ack_high_prio  # switch: ACK/NACK go to strict-priority queue 0
    uint8_t ecn         # switches mark ECN
    uint8_t pfc         # PFC frames are honoured
    uint8_t rate_bound  # pace data at the QP rate (else at line rate)
    uint8_t back_to_zero   # go-back to the chunk boundary
    int64_t chunk       # L2 chunk size (bytes)
    int64_t ack_interval   # ACK every this many bytes
    int64_t nack_interval  # minimum gap between NACKs for the same hole, ps
    int64_t reserve     # per ingress queue reserve, bytes
    int64_t resume_offset  # resume hysteresis, bytes
    int64_t quantum     # tx-time quantum in ps (1000 = reference ns truncation)
    int64_t max_packets # live packet limit (0 = none)
    int64_t rto         # retransmission timeout, ps (0 = none, as the reference)
    uint8_t ns3_rng     # 1: ECN draws (and PFC frames) consume the reference's random streams

ctypedef struct Calendar:
    # The near-future calendar in front of a Sim's heap (heap.pxd), sequential runs (KEY_INSERTION) and each
    # logical process of a partitioned run: an event due within w ns of the window start goes to its
    # nanosecond's bucket, the rest to the heap.  A logical process keeps its own across runs (parallel.pxi).
    uint8_t on      # 1: the calendar takes near events (set at build; a partitioned Kernel's own Sim turns
                    # it off, its logical processes have one each: parallel.pxi)
    int64_t k       # window start, an absolute ns bucket (t // 1000): every calendar event lies in
                    # [k, k + w); it only moves forward, to the bucket of each event popped
    int64_t w       # buckets in the window (a power of two; slot = bucket & (w - 1))
    int32_t* head   # per slot: first event of the bucket in ev (-1: empty); a bucket is sorted
    int32_t* tail   # by the heap's order (key_before); per slot: its last event
    uint64_t* bits  # one bit per slot: the bucket is not empty (w / 64 words)
    int64_t* tt     # per slot: (t, seq) of its last event, so that an append reads no pool entry
    uint64_t* tq
    int64_t* ts     # per slot: its last event's ts (KEY_LOCAL, KEY_RANK: a logical process's calendar)
    Event* ev       # event pool of the calendar
    int32_t* next   # per pool entry: next in its bucket, or in the free list
    int32_t* prev   # per pool entry: previous in its bucket (-1: the head), so that an event whose key was
                    # taken earlier (a lazy transmission end or wake-up) is placed by a walk from the tail
    int32_t free    # first free pool entry (-1: none)
    int32_t cap     # pool capacity
    int64_t n       # events in the calendar

ctypedef struct Sim:
    int64_t now         # simulated clock, ps
    int32_t fail        # nonzero once an allocation failed or the packet limit was hit
    uint64_t seq        # next event insertion number
    uint64_t rng        # splitmix64 state
    WhNs3Rng ns3rng     # the reference's stream sequence (used when Params.ns3_rng)
    Params p            # behaviour parameters
    # event heap
    Event* heap         # binary heap ordered by (t, tie key) (heap.pxd)
    int64_t heap_n      # events in the heap
    int64_t heap_cap    # capacity
    Calendar cal        # near-future calendar in front of the heap (above)
    uint64_t cur_seq    # tie key (cur_ts, cur_seq) of the event being processed (or last processed)
    int64_t cur_ts
    uint8_t key_mode    # KeyMode: how same-time events are ordered (heap.pxd)
    int32_t cur_node    # KEY_LOCAL: node of the event being processed (n_nodes between runs: Python's pushes)
    uint64_t* node_cnt  # KEY_LOCAL: per node (and one for Python): pushes it made so far
    int32_t n_nodes     # nodes (node_cnt has n_nodes + 1 entries)
    int64_t wire_n      # packets on wires whose arrival is not in the heap (see Port.wire_head)
    # fabric
    int32_t n_ports     # directed ports (two per link)
    int32_t n_hosts     # hosts
    uint8_t* is_switch  # per node
    int32_t* host_idx   # node -> host index, -1 for switches
    int32_t* sw_idx     # node -> switch index, -1 for hosts
    uint32_t* node_ip   # per node, reference addressing
    uint32_t* seed      # per node ECMP seed
    Port* ports         # per port
    MmuPort* mmu        # per port (used on switch ports)
    SwitchState* sw     # per switch
    int32_t* rt_start   # [node * n_hosts + host_idx] -> first next hop in rt_ports
    int32_t* rt_cnt     # number of next hops
    int32_t* rt_ports   # egress ports
    int32_t* host_nic   # host index -> first NIC port
    # packets
    Packet* pkts        # packet pool
    IntHop* ints        # INT_MAX_HOP records per packet (INT_HOPS mode only)
    int32_t pkt_cap     # pool capacity
    int32_t free_head   # free list head
    int32_t pkts_live   # packets allocated
    int32_t pkts_peak   # peak of pkts_live
    # flows
    Flow* flows         # per flow
    int32_t n_flows     # flows added
    int32_t flow_cap    # capacity
    int32_t* paths      # egress port lists of all flows
    int64_t paths_n     # entries used
    int64_t paths_cap   # capacity
    int32_t* done       # completed flows in completion order
    int32_t n_done      # completed flows
    int32_t n_done_cb   # completions with callbacks not yet handed to Python
    int32_t* notes      # connections whose oldest message completed, not yet handed to Python
    int32_t n_notes     # entries in notes
    int32_t notes_cap   # capacity of notes
    int32_t* rnotes     # flows / connections whose rcv_end was reached at the receiver, not yet handed to Python
    int32_t n_rnotes    # entries in rnotes
    int32_t rnotes_cap  # capacity of rnotes
    int64_t budget      # heap pops run_loop may still make before returning (Network.step), -1: no bound
    # congestion control: one state array per algorithm in use, indexed by flow
    CcParams cc         # congestion-control parameters (each algorithm reads its own)
    void* cc_st[8]      # per CcKind k: the flows' states (CC_TABLE[k].state_size bytes each, entry fi for
                        # flow fi; meaningful for the flows whose cc is k), allocated once k is in use
    uint32_t cc_used    # bit k: kind k is in use (cc.kind, or some flow's): its array grows with the flows
    Accel acc          # the accelerator (partitions, steady windows, skips)
    const AccelHooks* hooks  # the accelerator's hooks the kernel calls: the no-op row
                             # (accel_hooks_off) unless accel_setup switched them on
    # sampler
    int64_t sample_interval  # ps between rate / queue samples (0 = off)
    int64_t* samples    # rows of (time ps, kind 0 flow / 1 port, index, value)
    int64_t n_samples   # rows used
    int64_t samples_cap # rows allocated
    # PFC log
    PfcRecord* pfc_log  # frames received
    int64_t pfc_n       # records
    int64_t pfc_cap     # capacity
    # statistics
    int64_t events[10]  # events processed by kind
    int64_t stale_events   # cancelled wake-ups popped and ignored
    int64_t pops[10]    # heap pops by event kind (processed, stale, chained flow-start phases, virtual-time notes)
    int64_t stale_by[10]   # stale pops by event kind (a superseded token: the event was re-armed or cancelled)
    int64_t tx_ctrl     # EV_TX_DONE events (scheduled transmission ends) of control packets (ACK, NACK, PFC)
    int64_t tx_unsched  # transmission ends never scheduled: found nothing to send, no event (see start_tx)
    int64_t wake_unsched   # NIC wake-ups never scheduled (see nic_arm): passed with nothing to send (no event)
                           # or superseded by an earlier one (no stale pop)
    uint8_t eager_tx    # 1: every transmission end is scheduled (Network.step counts heap pops)
    int64_t arrive_ctrl # EV_ARRIVE events of control packets (ACK, NACK, PFC)
    int64_t txdone_idle # EV_TX_DONE events after which the port stays idle (nothing to send next)
    int64_t wake_idle   # EV_NIC_WAKE events (not stale) that sent no packet
    int64_t wake_busy   # of those, the ones that found the NIC busy (its TX_DONE ahead tries again)
    int64_t data_pkts   # data packets sent by NICs
    int64_t ctrl_pkts   # ACK/NACK packets sent
    int64_t drops       # packets dropped (buffer overflow)
    int64_t corrupt     # packets lost to the link error model
    int64_t pfc_pauses  # PFC pause frames sent
    int64_t pfc_resumes # PFC resume frames sent
    int64_t ecn_marks   # packets CE-marked
    int64_t nacks       # NACKs sent
    int64_t timeouts    # retransmission timeouts that fired a go-back-N
    int64_t max_qbytes  # largest per-port queue seen, bytes
    int64_t max_buffer  # largest per-switch buffer use seen, bytes
    # random streams per port and the partitioned kernel (parallel.pxi)
    uint64_t* port_rng  # ecn_rng='port': per port, the splitmix state of its ECN draws and link errors
                        # (NULL: those draw from rng or ns3rng)
    uint8_t* port_cut   # a logical process: per port, 1 if its peer belongs to another one (its arrivals
                        # leave through lp_send); NULL in the sequential kernel
    void* lp            # a logical process: its Lp record (parallel.pxi); NULL otherwise
    void* par           # a Kernel set to run partitioned: its Par driver (parallel.pxi); NULL otherwise
    int64_t* done_key   # a logical process: per entry of done, the tie key (ts, seq) of the completing event
                        # (KEY_RANK: ts = its rank, once its round is ranked)
    # KEY_RANK (heap.pxd, parallel.pxi): the processing rank of events rebuilt across logical processes
    int64_t cur_ref     # the ts of a key taken now: -1 - the slot of the event being processed, or (between
                        # runs, the Kernel's) the rank given to Python's pushes
    uint64_t kid        # keys taken by the event being processed (or by Python since cur_ref was set)
    int64_t* rank_val   # per slot (one per event processed since the last compaction): its rank, provisional
                        # (rank_base + slot - slot0) until its round is ranked; keys that say -1 - slot read it
    int64_t n_slot      # slots used
    int64_t cap_slot    # capacity of rank_val and of the round log
    int64_t slot0       # first slot of the round being run
    int64_t rank_base   # ranks of the round start here (every earlier round's are below)
    int64_t* log_t      # per slot of the round: the event's time, for the ranking (parallel.pxi rank_slice)
    int64_t* log_pv     # and its scheduling event: its rank (>= 0), or -1 - its place in the round
    uint64_t* log_seq   # and its key's push counter
    uint8_t rank_log    # 1: rank_slot writes the round log (a logical process among several; one alone
                        # has its provisional values for ranks and is never merged)
    uint8_t defer_draws # a logical process: ECN and PFC draws of the one stream (rng or ns3rng) are deferred
                        # to its round's end (draws.pxd), as their place in the stream is the events' rank
    DrawRec* draws      # the round's deferred draws, in the order made
    int64_t n_draws     # entries in draws
    int64_t cap_draws   # capacity of draws


ctypedef struct CcOps:
    # One congestion-control algorithm as the kernel and the accelerator see it: the
    # row CC_TABLE[kind] (cc_table.pxi) of the flows whose Flow.cc is that kind.  Every
    # operation is set (one that has nothing to do for an algorithm is a no-op).
    const char* name    # the algorithm's name in the registry (wormhole.cc.REGISTRY)
    int32_t int_mode    # IntMode its feedback needs in data packets and ACKs
    int32_t int_bytes   # header bytes that feedback adds to every data packet and ACK
    size_t state_size   # bytes of one flow's state in Sim.cc_st[kind] (0: none)
    uint8_t vec_ints    # bit k: value k of its state vector (get_vec) is an integer
    uint8_t fixed_timers  # bit t: its timer t keeps its absolute time across a fast-forward (the
                          # others are held and shifted with the partition's events)
    uint8_t timer_rate  # 1: its timers change the rate (so a var_win window) without an ACK
    # the flow was added (rate = max_rate, window, base RTT and path set; state zeroed)
    void (*init)(Sim* s, int32_t fi) noexcept nogil
    # an ACK or NACK of the flow (packet pk: echoed ECN, INT records, timestamp) after
    # snd_una moved; the algorithm sets the rate (change_rate) and its timers
    void (*on_ack)(Sim* s, int32_t fi, int32_t pk) noexcept nogil
    # its EV_CC_TIMER fired (b = token * 4 + timer); a stale token is counted and ignored
    void (*on_timer)(Sim* s, int32_t fi, int64_t b) noexcept nogil
    # a retransmission timeout sent the flow back to snd_una (Params.rto > 0)
    void (*on_rto)(Sim* s, int32_t fi) noexcept nogil
    # the flow completed: its pending timers become stale
    void (*on_finish)(Sim* s, int32_t fi) noexcept nogil
    # a fast-forward moved the flow nbytes further and dt ps later without packets:
    # shift what the state holds in sequence numbers and absolute times
    void (*shift)(Sim* s, int32_t fi, int64_t nbytes, int64_t dt) noexcept nogil
    # v[1..3] = the 3 values that memo entries and mirrors store (v[0], the rate, and
    # zeros are set by the caller)
    void (*get_vec)(Sim* s, int32_t fi, double* v) noexcept nogil
    # take a stored state vector (the flow's rate is already v[0])
    void (*set_vec)(Sim* s, int32_t fi, double* v) noexcept nogil
    # the state as a dict (Kernel.cc_state)
    object (*as_dict)(Sim* s, int32_t fi)
    # the flow's sending rate as the accelerator sees it (steady test, memo colour, state vector
    # v[0]), bps: its pacing rate (Flow.rate), or a window algorithm's window per RTT
    int64_t (*send_rate)(Sim* s, int32_t fi) noexcept nogil
    # the rate the accelerator's steady test samples at each ACK, bps: send_rate, or, where the
    # algorithm commits a reference rate once per control period and moves its sending rate
    # around it at every ACK (HPCC's Rc under fast react), that committed rate
    int64_t (*steady_rate)(Sim* s, int32_t fi) noexcept nogil


ctypedef struct AccelHooks:
    # The accelerator as the kernel sees it: the hooks the kernel calls at the seam, and
    # nothing else of it (besides accel.pxd's inline port_frozen and the Python-facing
    # calls of Kernel's methods).  Two rows (accel.pyx): the accelerator's, and a no-op row
    # while acceleration is off, where every hook does nothing and answers False / 0.
    # flow_start (its QP joins its NIC) or data posted to a connection on its NIC: a flow
    # with bytes to send joins a partition (merging those its ports touch; skips there end)
    void (*flow_active)(Sim* s, int32_t fi) noexcept nogil
    # flow_complete: the flow leaves its partition (split check deferred)
    void (*flow_done)(Sim* s, int32_t fi) noexcept nogil
    # host_receive_ack, after the flow's CC reacted: one rate sample (may begin a skip of
    # its partition); a connection with everything acknowledged goes idle
    void (*on_ack)(Sim* s, int32_t fi) noexcept nogil
    # note_message: a connection's oldest message was acknowledged (mirrors following it report theirs)
    void (*on_message)(Sim* s, int32_t fi) noexcept nogil
    # note_delivered: the flow's receiver got every byte up to its rcv_end (mirrors following it too)
    void (*on_delivered)(Sim* s, int32_t fi) noexcept nogil
    # Kernel.post, before the kernel adds the bytes: True if a skip the connection sends through
    # took them (its size already grown: the kernel adds nothing); False after ending the skips
    # on the connection's ports (and looking its partition up afresh if it was idle)
    bint (*on_post)(Sim* s, int32_t fi, int64_t nbytes) noexcept nogil
    # a CC timer that would raise the flow's rate without an ACK fires (DCQCN's rate increase):
    # True if the skip of its partition stands for it (re-armed, not fired); False: fire it
    # (a skip that it would interrupt ends first)
    bint (*rate_timer)(Sim* s, int32_t fi) noexcept nogil
    # run_loop popped EV_SKIP_END (a = slot, b = token): the skip ends as planned; False if stale
    bint (*skip_end)(Sim* s, int32_t slot, int64_t token) noexcept nogil
    # run_loop popped EV_MSG_NOTE (a = flow, b): a message end (b >= 0) or a delivery (b < 0) at
    # virtual time inside a skip, reported if still due; False if stale
    bint (*note_due)(Sim* s, int32_t fi, int64_t b) noexcept nogil
    # Kernel.set_msg_end (rcv 0) / set_rcv_end (rcv 1): the flow is inside a skip: the notice is
    # reported now if passed or planned at its virtual time (True); False if not in a skip
    bint (*plan_note)(Sim* s, int32_t fi, bint rcv) noexcept nogil
    # bytes the skip the flow is in has moved its sender (rcv 0: snd_una as of now is the flow's
    # plus these) or its receiver (rcv 1: rcv_nxt); 0 outside a skip
    int64_t (*skipped_bytes)(Sim* s, int32_t fi, bint rcv) noexcept nogil
    # Kernel.port_state: events the fast-forwards under way have skipped on the port so far
    # (counted into Port.ev_skipped only when each ends); 0 outside them
    double (*port_skipped)(Sim* s, int32_t port) noexcept nogil
    # Kernel._grow_flows: the per-flow arrays grew from old_cap to cap entries; -1 if memory ran out
    int (*grow_flows)(Sim* s, int32_t old_cap, int32_t cap) noexcept nogil
    # Kernel.__dealloc__: free everything the accelerator allocated
    void (*release)(Sim* s) noexcept nogil


ctypedef struct KernelOps:
    # The kernel's services the accelerator calls (kernel.pyx fills one row, accel_setup
    # stores it in Accel.k): the accelerator reaches the event loop only through these.
    const CcOps* cc     # the CC table (CC_TABLE, cc_table.pxi): row Flow.cc of each flow
    # the port's pending events are all in the heap: its unscheduled NIC wake-up and
    # transmission end (see nic_arm, start_tx) are scheduled under their sequence numbers
    void (*port_settle)(Sim* s, int32_t port) noexcept nogil
    # every packet on the port's wire has its arrival in the heap (see wire_append)
    void (*wire_flush)(Sim* s, int32_t port) noexcept nogil
    # the port, if idle, tries to send (a switch's egress or a NIC), as after a transmission end
    void (*port_kick)(Sim* s, int32_t port) noexcept nogil
    # a connection's oldest pending message is acknowledged: tell Python
    void (*note_message)(Sim* s, int32_t fi) noexcept nogil
    # the flow's receiver holds every byte up to rcv_end: record and tell Python
    void (*note_delivered)(Sim* s, int32_t fi) noexcept nogil
    # v[0..3]: the flow's sending rate and the 3 algorithm values memo entries store
    void (*cc_vector)(Sim* s, int32_t fi, double* v) noexcept nogil
    # the packet (out of every queue, wire and event) goes back to the free list
    void (*pkt_free)(Sim* s, int32_t pk) noexcept nogil
