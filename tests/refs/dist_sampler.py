# CPython reference for tests/golden/stdlib/dist_sampler.out: the index arithmetic of
# torch.utils.data.distributed.DistributedSampler (pad by repeating the head, or drop
# the tail; rank::num_replicas), shuffled with random.Random(seed + epoch) as Kiln's
# sampler does (torch shuffles with its own generator, so shuffled orders differ from
# torch's; the unshuffled shards are torch's exactly).
import random


def indices(n, num_replicas, rank, shuffle=True, seed=0, epoch=0, drop_last=False):
    order = list(range(n))
    if shuffle:
        random.Random(seed + epoch).shuffle(order)
    if drop_last and n % num_replicas != 0:
        num_samples = n // num_replicas
    else:
        num_samples = -(-n // num_replicas)
    total = num_samples * num_replicas
    if len(order) < total:
        pad = total - len(order)
        order += (order * (pad // len(order) + 1))[:pad]
    else:
        order = order[:total]
    return num_samples, order[rank:total:num_replicas]


print(False, True)
print("print0 prints outside a world")
for n, drop in [(3, False), (3, True), (4, False)]:
    for r in range(n):
        k, idx = indices(10, n, r, shuffle=False, drop_last=drop)
        print(n, drop, r, k, idx)
print(indices(11, 2, 1, seed=3)[1])
print(indices(11, 2, 1, seed=3, epoch=1)[1])
print(indices(11, 2, 0, seed=3)[1])
print("ValueError: DistributedSampler: invalid rank 2, rank should be in the interval [0, 1]")
print("RuntimeError: the default process group is not initialized: call dist.init_process_group() first")
print("RuntimeError: the default process group is not initialized: call dist.init_process_group() first")
