# Unannotated training loops whose steps are not one optimizer.step() per
# backward (tests/integration/test_step_patterns.sh): MODE=accum (gradient
# accumulation: optimizer.step every 4 micro-batches, 12 updates),
# MODE=twoopt (two optimizers stepped every iteration, 20), MODE=manual
# (parameters updated by hand under no_grad, no optimizer object, 20).
# EXIT=os ends with os._exit(0), which runs no atexit handler.
import os, time
import torch
import torch.nn as nn
mode = os.environ.get("MODE", "manual")
torch.manual_seed(0)
a, b = nn.Linear(128, 256), nn.Linear(256, 128)
model = nn.Sequential(a, nn.ReLU(), b)
x, y = torch.randn(32, 128), torch.randn(32, 128)
if mode == "accum":
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for it in range(12):
        for micro in range(4):
            loss = ((model(x) - y) ** 2).mean() / 4
            loss.backward()
        opt.step(); opt.zero_grad()
        time.sleep(0.003)
elif mode == "twoopt":
    o1, o2 = torch.optim.SGD(a.parameters(), lr=0.01), torch.optim.Adam(b.parameters(), lr=1e-3)
    for it in range(20):
        loss = ((model(x) - y) ** 2).mean()
        o1.zero_grad(); o2.zero_grad(); loss.backward(); o1.step(); o2.step()
        time.sleep(0.003)
else:
    for it in range(20):
        loss = ((model(x) - y) ** 2).mean()
        model.zero_grad(); loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-0.01)
        time.sleep(0.003)
print(mode, "done", flush=True)
if os.environ.get("EXIT") == "os":
    os._exit(0)   # no atexit: the hooks' waiting records must still arrive
