# builds tests/data/dlc/small/{worker_0,worker_1,server_0}.dlc
W, S = 2, 1
SRV = 2
T0 = 1000 * 10**6  # us
push_len = {0: 100, 1: 1000}; resp_len = {0: 104, 1: 1004}; ACK, REQ = 19, 28
push_t = {0: 10, 1: 20}; resp_t = {0: 10, 1: 20}
recs = {0: [], 1: [], 2: []}
def opn(i, step): return 4 * i - 2 + step
names = ["Push_Send_Worker","Push_Recv_Worker","Pull_Send_Worker","Pull_Recv_Worker","Push_Recv_Server","Push_Send_Server","Pull_Recv_Server","Pull_Send_Server"]
T = {}  # (node, opname, key, i, peer) -> t
def rec(node, op, src, dst, length, key, i, peer, t, deps, many=None):
    step = names.index(op) % 4
    T[(node, op, key, i, peer)] = t
    recs[node].append(dict(src=src, dst=dst, length=length, op=op, key=key, i=i, op_num=opn(i, step), peer=peer, t=t, deps=deps, many=many))
def tag(r): return ("w%d" % r) if r < W else ("s%d" % (r - W))
last_pull = {}
for w in range(W):
    for k in (0, 1):
        t = 10 * k + w
        rec(w, "Pull_Send_Worker", w, SRV, REQ, k, 0, SRV, t, [])
        rec(SRV, "Pull_Recv_Server", w, SRV, REQ, k, 0, w, t + 5, [])
        rec(SRV, "Pull_Send_Server", SRV, w, resp_len[k], k, 0, w, t + 8, [(k, opn(0, 2), w)])
        rec(w, "Pull_Recv_Worker", SRV, w, resp_len[k], k, 0, SRV, t + 8 + resp_t[k], [(k, opn(0, 2), SRV)])
for i in (1, 2):
    psw = {}
    for w in range(W):
        lp = max(T[(w, "Pull_Recv_Worker", k, i - 1, SRV)] for k in (0, 1))
        psw[(w, 1)] = lp + 100 + 10 * w
        psw[(w, 0)] = lp + 130 + 10 * w
        for k in (1, 0):
            rec(w, "Push_Send_Worker", w, SRV, push_len[k], k, i, SRV, psw[(w, k)], None, many=[(opn(i - 1, 3), SRV)])
            rec(SRV, "Push_Recv_Server", w, SRV, push_len[k], k, i, w, psw[(w, k)] + push_t[k], None, many=[(opn(i - 1, 3), w)])
    for k in (1, 0):
        pss = max(T[(SRV, "Push_Recv_Server", k, i, w)] for w in range(W)) + 7
        for w in range(W):
            rec(SRV, "Push_Send_Server", SRV, w, ACK, k, i, w, pss, [(k, opn(i, 0), x) for x in range(W)], many=True)
            rec(w, "Push_Recv_Worker", SRV, w, ACK, k, i, SRV, pss + 5, [(k, opn(i, 0), SRV)])
            rec(w, "Pull_Send_Worker", w, SRV, REQ, k, i, SRV, pss + 7, [(k, opn(i, 1), SRV)])
            rec(SRV, "Pull_Recv_Server", w, SRV, REQ, k, i, w, pss + 12, [(k, opn(i, 1), w)])
            rec(SRV, "Pull_Send_Server", SRV, w, resp_len[k], k, i, w, pss + 15, [(k, opn(i, 2), w)])
            rec(w, "Pull_Recv_Worker", SRV, w, resp_len[k], k, i, SRV, pss + 15 + resp_t[k], [(k, opn(i, 2), SRV)])
import sys, os
out = sys.argv[1]
for node, rs in recs.items():
    rs.sort(key=lambda r: r["t"])
    name = ("worker_%d" % node) if node < W else "server_0"
    with open(os.path.join(out, name + ".dlc"), "w") as f:
        f.write("== num_workers:= 2 num_servers:= 1 worker_hostname:= hand-built Worker_ID:= 0,1, Server_ID:= 2,\n")
        f.write("== a small consistent job built by hand for the tests: see README.md\n")
        f.write("id\tsrc\tdst\tlength\tnum_pp\toperation\top_id\tdep_type\td_time\ttime_sec\ttime_usec\tid_dep\n")
        f.write("0\t%d\t%d\t25\t0\tOP:= SendCom_To_Servers\n" % ((node, SRV) if node < W else (SRV, 0)))
        for n, r in enumerate(rs, 1):
            step = names.index(r["op"]) % 4
            if r["many"] is True:
                items = r["deps"]; dep = "(" + "".join("%d-%d-%s." % (k, o, tag(p)) for k, o, p in items) + ")"
                dt = r["t"] - max(T[(node, names[names.index(r["op"]) - 1], k, r["i"], p)] for k, o, p in items)
                dtype = 1
            elif r["many"]:
                prev = [x for x in rs if x["op_num"] == r["many"][0][0] and x["peer"] == r["many"][0][1]]
                if not prev:
                    dep, dt, dtype = "-1", 0, 0
                else:
                    dep = "(" + "".join("%d-%s." % (o, tag(p)) for o, p in r["many"]) + ")"
                    dt = r["t"] - max(x["t"] for x in prev); dtype = 4
            elif r["deps"]:
                k, o, p = r["deps"][0]
                d = [x for x in rs if x["key"] == k and x["op_num"] == o and x["peer"] == p][0]
                dep = "%d-%d-%s" % (k, o, tag(p)); dt = r["t"] - d["t"]; dtype = step
            else:
                dep, dt, dtype = "-1", 0, 0
            t = T0 + r["t"]
            pp = 2 * (r["i"] * 2 + r["key"]) + (1 if step < 2 else 2)
            f.write("%d\t%d\t%d\t%d\t%d\tOP:= %s\t%d-%d-%s\t%d\t%d\t%d\t%d\t%s\n" % (n, r["src"], r["dst"], r["length"], pp, r["op"], r["key"], r["op_num"], tag(r["peer"]), dtype, dt, t // 10**6, t % 10**6, dep))
