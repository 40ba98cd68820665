# Held-out jobs that fail the way real ones do; picked by AUTOTUNE_JOB.
import os, signal, sys, time
import autotune_trial
job = autotune_trial.params(job="ok").job
if job == "segv_in_worker" or job == "dl_sigkill" or job == "dl_shm":
    import torch
    from torch.utils.data import DataLoader, Dataset
    sig = {"segv_in_worker": signal.SIGSEGV, "dl_sigkill": signal.SIGKILL, "dl_shm": signal.SIGBUS}[job]
    class D(Dataset):
        def __len__(self): return 10000
        def __getitem__(self, i):
            if i == 40: os.kill(os.getpid(), sig)
            return torch.zeros(8)
    with autotune_trial.Meter(batch_size=4, num_workers=2) as m:
        for b in m.batches(DataLoader(D(), batch_size=4, num_workers=2)):
            time.sleep(0.002)
elif job == "torchrun_rank9":
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure
    raise ChildFailedError("train.py", {0: ProcessFailure(local_rank=0, pid=31337, exitcode=-9, error_file="/x")})
elif job == "cuda_oom":
    import torch
    with autotune_trial.Meter(batch_size=4):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 79.10 GiB total capacity)")
elif job == "hog":
    x = bytearray(900 << 20)
    x[::4096] = b"x" * len(x[::4096])
elif job == "sh_sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif job == "sh_segv":
    import ctypes; ctypes.string_at(0)
else:
    with autotune_trial.Meter(batch_size=4, warmup_s=0.2, max_s=2) as m:
        for b in m.batches(iter(lambda: [0] * 4, None)):
            time.sleep(0.001)
