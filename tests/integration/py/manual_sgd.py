# A word-language-model-style loop with no optimizer object: an LSTM over
# random tokens, the update by hand (p.data.add_(p.grad, alpha=-lr)) after
# clip_grad_norm_, gradients cleared with model.zero_grad(), as PyTorch's
# examples/word_language_model/main.py does. Plain PyTorch, no DDP.
# Arguments: iterations (12).
import sys

import torch


class Model(torch.nn.Module):
    def __init__(self, ntoken=50, ninp=16, nhid=16):
        super().__init__()
        self.encoder = torch.nn.Embedding(ntoken, ninp)
        self.rnn = torch.nn.LSTM(ninp, nhid, 2)
        self.decoder = torch.nn.Linear(nhid, ntoken)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(out), hidden


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    torch.manual_seed(0)
    model = Model()
    crit = torch.nn.CrossEntropyLoss()
    hidden = (torch.zeros(2, 4, 16), torch.zeros(2, 4, 16))
    lr = 0.5
    for _ in range(iters):
        data = torch.randint(0, 50, (8, 4))
        target = torch.randint(0, 50, (8 * 4,))
        hidden = tuple(h.detach() for h in hidden)
        model.zero_grad()
        out, hidden = model(data, hidden)
        loss = crit(out.view(-1, 50), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
    print("loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
