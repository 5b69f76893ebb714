"""One rank of a real torch.distributed job (gloo) over RingfeedDataset, for
test_dist.py: two epochs, an all_reduce per step, a collective timeout so a
rank left waiting fails instead of hanging. The dataset is built before
init_process_group: its rank and world are resolved when iteration starts.
Prints "ids ..." (epoch 0's record ids) and "steps E0 E1 LEN" on success.
Usage: dist_worker.py MANIFEST INIT_FILE RANK WORLD [WORKERS]"""

import datetime
import sys

import torch
import torch.distributed as dist
import torch.utils.data

from ringfeed.torch import RingfeedDataset


def main():
    manifest, init_file, rank, world = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    workers = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    ds = RingfeedDataset(manifest, batch=7, budget="16MiB", seed=3, shuffle_window=64)
    dist.init_process_group(
        "gloo",
        init_method=f"file://{init_file}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=30),
    )
    assert ds.rank == rank and ds.world == world  # from torch.distributed
    steps, ids = [], []
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    for epoch in range(2):
        ds.set_epoch(epoch)
        n = 0
        for item in dl:
            t = torch.tensor([len(item["offsets"]) - 1], dtype=torch.int64)
            dist.all_reduce(t)  # a rank with fewer batches would leave the others here
            if epoch == 0:
                p, o = item["payload"], item["offsets"].tolist()
                ids.extend(bytes(p[o[i]:o[i] + 6].numpy()).decode() for i in range(len(o) - 1))
            n += 1
        steps.append(n)
    dist.barrier()
    print("ids", " ".join(ids), flush=True)
    print("steps", steps[0], steps[1], len(ds), flush=True)
    ds.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
