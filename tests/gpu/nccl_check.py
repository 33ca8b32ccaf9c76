#!/usr/bin/env python3
"""Collective correctness and an all_reduce bandwidth sweep, run by torchrun
once per vfab node (one rank per node, all ranks may share GPU 0).

Correctness: all_reduce (sum of rank+1), all_gather, reduce_scatter,
broadcast, all_to_all on fp32 and bf16. Sweep: all_reduce from --min-bytes to
--max-bytes, printing algbw/busbw the way nccl-tests does
(busbw = algbw * 2 (n-1) / n for all_reduce).
--ddp STEPS: training steps of a small model under DistributedDataParallel,
checked against the same steps taken in one process on every rank's data.
--loop SECONDS: all_reduce of 1 MiB over and over with a line a second, for
the fault drill (a link taken down meanwhile must end it with an error).
--backend gloo runs it all on CPU tensors: the CPU rehearsal (dry_run.sh).

Exit status is non-zero if any check fails, so `vfab run` reports it.
"""
import argparse
import os
import sys
import time

# torch is imported in main(), after --dry-run: the CPU dry run in CI has no torch.
torch = None
dist = None


def log(msg):
    print(msg, flush=True)


def check(name, ok, detail=""):
    log(f"CHECK {name}: {'PASS' if ok else 'FAIL'} {detail}".rstrip())
    return ok


def correctness(rank, world, dev):
    ok = True
    # gloo reduces no bf16: the CPU rehearsal takes fp64 in its place.
    for dtype in (torch.float32, torch.bfloat16 if dist.get_backend() == "nccl" else torch.float64):
        tag = str(dtype).replace("torch.", "")
        n = 4096
        # all_reduce: every rank contributes rank+1 -> n(n+1)/2 everywhere
        t = torch.full((n,), float(rank + 1), dtype=dtype, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        want = world * (world + 1) / 2
        ok &= check(f"all_reduce/{tag}", bool((t.float() == want).all()), f"got {t[0].item()} want {want}")

        # all_gather: slot i holds i+1
        src = torch.full((n,), float(rank + 1), dtype=dtype, device=dev)
        outs = [torch.empty_like(src) for _ in range(world)]
        dist.all_gather(outs, src)
        good = all(bool((o.float() == i + 1).all()) for i, o in enumerate(outs))
        ok &= check(f"all_gather/{tag}", good)

        # reduce_scatter: input chunk j of rank r = (r+1)*(j+1) -> out = (j+1)*sum(r+1) for j = rank
        # (gloo has no reduce_scatter)
        if dist.get_backend() == "nccl":
            ins = [torch.full((n,), float((rank + 1) * (j + 1)), dtype=dtype, device=dev) for j in range(world)]
            out = torch.empty((n,), dtype=dtype, device=dev)
            dist.reduce_scatter(out, ins, op=dist.ReduceOp.SUM)
            want = (rank + 1) * world * (world + 1) / 2
            ok &= check(f"reduce_scatter/{tag}", bool((out.float() == want).all()),
                        f"got {out[0].item()} want {want}")

        # broadcast from the last rank
        b = torch.full((n,), float(rank + 7), dtype=dtype, device=dev)
        dist.broadcast(b, src=world - 1)
        ok &= check(f"broadcast/{tag}", bool((b.float() == world - 1 + 7).all()))

        # all_to_all: rank r sends r*world+j to rank j -> receives i*world+rank from i
        if dtype == torch.float32 or dist.get_backend() == "nccl":
            send = torch.tensor([float(rank * world + j) for j in range(world)], dtype=dtype, device=dev)
            recv = torch.empty_like(send)
            dist.all_to_all_single(recv, send)
            want = torch.tensor([float(i * world + rank) for i in range(world)], dtype=dtype, device=dev)
            ok &= check(f"all_to_all/{tag}", bool((recv == want).all()))
    return ok


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def ddp(rank, world, dev, steps):
    """STEPS of SGD under DDP, then the same steps in this process alone on
    every rank's batches (the mean of their gradients): the parameters must
    agree, and be the same on every rank."""
    from torch.nn.parallel import DistributedDataParallel

    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))

    def batches(r):
        g = torch.Generator().manual_seed(1000 + r)
        return [(torch.randn(32, 64, generator=g), torch.randn(32, 8, generator=g)) for _ in range(steps)]

    net = model().to(dev)
    wrapped = DistributedDataParallel(net, device_ids=[dev.index] if dev.type == "cuda" else None)
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.05)
    t0 = time.perf_counter()
    for x, y in batches(rank):
        loss = torch.nn.functional.mse_loss(wrapped(x.to(dev)), y.to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
    sync(dev)
    dt = time.perf_counter() - t0
    ref = model()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    per_rank = [batches(r) for r in range(world)]
    for step in range(steps):
        ref_opt.zero_grad()
        for r in range(world):
            x, y = per_rank[r][step]
            (torch.nn.functional.mse_loss(ref(x), y) / world).backward()
        ref_opt.step()
    got = torch.cat([p.detach().float().flatten().cpu() for p in net.parameters()])
    want = torch.cat([p.detach().flatten() for p in ref.parameters()])
    hi, lo = got.clone().to(dev), got.clone().to(dev)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    err = (got - want).abs().max().item()
    ok = check("ddp/same_on_every_rank", bool(torch.equal(hi, lo)))
    ok &= check("ddp/matches_one_process", err < 1e-4, f"max diff {err:.2e}")
    log(f"DDP {steps} steps in {dt:.3f} s, last loss {loss.item():.4f}")
    return ok


def loop(rank, dev, seconds):
    """all_reduce until SECONDS pass; an error ends it with status 3."""
    t = torch.ones(1 << 18, dtype=torch.float32, device=dev)
    start = last = time.time()
    n = 0
    log(f"LOOP rank {rank} started t={start:.3f}")
    try:
        while time.time() - start < seconds:
            dist.all_reduce(t)
            sync(dev)
            n += 1
            if time.time() - last >= 1:
                last = time.time()
                log(f"LOOP rank {rank} {n} all_reduces t={last:.3f}")
    except Exception as e:  # the drill's expected end: NCCL's (or gloo's) error
        log(f"LOOP rank {rank} error t={time.time():.3f} after {n}: {type(e).__name__}: {str(e)[:300]}")
        sys.exit(3)
    log(f"LOOP rank {rank} done t={time.time():.3f} after {n}")
    return True


def sweep(rank, world, dev, lo, hi, iters):
    if rank == 0:
        log(f"{'size(B)':>12} {'count':>12} {'time(us)':>10} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12}")
    size = lo
    rows = []
    while size <= hi:
        count = size // 4
        t = torch.ones(count, dtype=torch.float32, device=dev)
        n_it = iters if size < (64 << 20) else max(3, iters // 4)
        for _ in range(3):
            dist.all_reduce(t)
        sync(dev)
        t0 = time.perf_counter()
        for _ in range(n_it):
            dist.all_reduce(t)
        sync(dev)
        dt = (time.perf_counter() - t0) / n_it
        algbw = size / dt / 1e9
        busbw = algbw * 2 * (world - 1) / world
        rows.append((size, busbw))
        if rank == 0:
            log(f"{size:>12} {count:>12} {dt * 1e6:>10.1f} {algbw:>12.3f} {busbw:>12.3f}")
        del t
        size *= 4 if size < (1 << 20) else 2
    if rank == 0 and rows:
        peak = max(r[1] for r in rows)
        log(f"SWEEP peak_busbw_GBps={peak:.3f} peak_busbw_Gbps={peak * 8:.2f}")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-bytes", type=int, default=1024)
    ap.add_argument("--max-bytes", type=int, default=1 << 30)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--skip-correctness", action="store_true")
    ap.add_argument("--skip-sweep", action="store_true")
    ap.add_argument("--ddp", type=int, default=0, metavar="STEPS")
    ap.add_argument("--loop", type=float, default=0, metavar="SECONDS")
    ap.add_argument("--backend", default="nccl", choices=("nccl", "gloo"),
                    help="gloo: CPU tensors, the rehearsal on a machine without a GPU")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds a collective may wait (the process group's timeout)")
    ap.add_argument("--dry-run", action="store_true",
                    help="print what the launch gave this rank and stop before torch")
    args = ap.parse_args()

    if args.dry_run:
        keys = ("NODE_RANK", "RANK", "NNODES", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                "VFAB_NODE", "VFAB_FABRIC")
        log(f"DRYRUN host {os.uname().nodename} " + " ".join(f"{k}={os.environ.get(k, '')}" for k in keys))
        sys.exit(0)
    global torch, dist
    import datetime
    import torch
    import torch.distributed as dist

    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", "0"))
        gpu = int(os.environ.get("VFAB_GPU", str(local)))
        torch.cuda.set_device(gpu)
        dev = torch.device("cuda", gpu)
        log(f"rank {rank}/{world} host {os.uname().nodename} gpu {gpu} of {torch.cuda.device_count()} visible"
            f" nccl {torch.cuda.nccl.version()}")
    else:
        dev = torch.device("cpu")
        log(f"rank {rank}/{world} host {os.uname().nodename} cpu, {args.backend}, torch {torch.__version__}")

    ok = True
    if not args.skip_correctness:
        ok = correctness(rank, world, dev)
    if not args.skip_sweep:
        sweep(rank, world, dev, args.min_bytes, args.max_bytes, args.iters)
    if args.ddp:
        ok &= ddp(rank, world, dev, args.ddp)
    if args.loop:
        loop(rank, dev, args.loop)
    dist.barrier()
    dist.destroy_process_group()
    log(f"RESULT {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
