"""What a traced cluster step did when: the timeline of each worker's
Chrome trace (`--trace_file` on a cluster, one file a worker).

    python benchmarks/trace_timeline.py /tmp/t.worker0.json /tmp/t.worker1.json

For each trace, in milliseconds from the worker's first op of the step:
the forward pass up to its loss (`*SoftmaxCrossEntropyWithLogits`), the
backward pass from there (its first and last op under a `gradients/` name
scope; the L2 loss's gradients need only the weights and run while the
forward pass does), each all-reduce (`CollectiveReduce`) from its launch
to its end, the data the worker fetched from its peers (`RecvBuf`, a
collective's chunk; `RecvTensor`, a tensor of another task) with the time
at least one such fetch was in flight, and the step's end. A transfer that
runs beside the backward pass starts before the backward pass ends; a step
whose fetches start after it ends hid none of its transfer.

The traces of different hosts line up only as well as their clocks do
(on one machine, exactly): each is read on its own clock.
"""

import json
import sys

TRANSFER_OPS = ('RecvBuf', 'RecvTensor')


def events(path):
  """[(start ms, end ms, name, op)] of a Chrome trace's complete events,
  in start order, from its first event."""
  with open(path) as f:
    trace = json.load(f)
  found = []
  for event in trace['traceEvents']:
    if event.get('ph') != 'X':
      continue
    args = event.get('args', {})
    name = args.get('name', event['name'])
    op = args.get('op', event['name'])
    if op == 'unknown':  # TensorFlow's timeline names an RPC by its name.
      op = name
    found.append((event['ts'] / 1000.0,
                  (event['ts'] + event.get('dur', 0)) / 1000.0, name, op))
  if not found:
    return []
  first = min(e[0] for e in found)
  return sorted((s - first, e - first, n, o) for s, e, n, o in found)


def busy(spans):
  """The total length of the union of (start, end) spans."""
  total, reach = 0.0, None
  for start, end in sorted(spans):
    if reach is None or start > reach:
      total += end - start
      reach = end
    elif end > reach:
      total += end - reach
      reach = end
  return total


def summary(found):
  """The timeline of one trace's `events`."""
  losses = [e for e in found if e[3].endswith('SoftmaxCrossEntropyWithLogits')]
  loss_end = max(e[1] for e in losses) if losses else None
  backward = [e for e in found if ('/gradients/' in e[2] or
                                   e[2].startswith('gradients/')) and
              (loss_end is None or e[0] >= loss_end)]
  transfers = {}
  for op in TRANSFER_OPS:
    spans = [(e[0], e[1]) for e in found if e[3] == op]
    if spans:
      transfers[op] = (min(s for s, _ in spans), max(e for _, e in spans),
                       busy(spans), len(spans))
  return dict(
      end=max(e[1] for e in found), loss_end=loss_end,
      backward=(min(e[0] for e in backward), max(e[1] for e in backward))
      if backward else None,
      collectives=[(e[0], e[1], e[2]) for e in found
                   if e[3] == 'CollectiveReduce'],
      transfers=transfers)


def lines(path, s):
  out = ['%s: the step ends at %.1f ms' % (path, s['end'])]
  if s['loss_end'] is not None:
    out.append('  forward pass: the loss at %.1f ms' % s['loss_end'])
  if s['backward']:
    out.append('  backward pass: %.1f to %.1f ms' % s['backward'])
  for start, end, name in s['collectives']:
    out.append('  %s: %.1f to %.1f ms' % (name, start, end))
  for op in TRANSFER_OPS:
    if op in s['transfers']:
      first, last, in_flight, count = s['transfers'][op]
      out.append('  %s from peers (%d): %.1f to %.1f ms, in flight %.1f ms '
                 'of them' % (op, count, first, last, in_flight))
  return out


def main(argv):
  if not argv:
    sys.stderr.write(__doc__)
    return 2
  for path in argv:
    print('\n'.join(lines(path, summary(events(path)))))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
