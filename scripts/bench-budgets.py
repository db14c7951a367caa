#!/usr/bin/env python3
# Redis CPU per job of the budget check (issue 28, item 7; docs/budgets.md, "Measured"): the very script text of
# QueueScripts.budgetCheck (prelude included, read from the Swift sources) run against a redis-server of its own
# on a free port, in batches of 200 jobs each under a per-app and a per-device budget, as a worker calls it once
# per claimed batch; INFO commandstats gives the server's time per call. Stops the server by pid.
# With `grouped`, jobs come 100 to a device in a row at 5 a second per device: each device's backlog is held
# ahead and its sends take entries in the app budget's calendar (the costly case).
# usage: scripts/bench-budgets.py DEVICES CALLS [grouped]   (e.g. 200 500: 200 devices, 500 calls of 200 jobs)
import re, subprocess, socket, time, os, sys
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
def swift_string(path, name):
    text = open(path).read()
    m = re.search(name + r' = (?:RedisScript\(prelude \+ )?#"""\n(.*?)\n( *)"""#', text, re.S)
    body, indent = m.group(1), m.group(2)
    return '\n'.join(l[len(indent):] if l.startswith(indent) else l.lstrip() for l in body.split('\n'))
prelude = swift_string(root + '/Sources/Queue/RedisQueue/QueueScripts.swift', 'static let prelude')
body = swift_string(root + '/Sources/Queue/RedisQueue/BudgetCheck.swift', 'public static let budgetCheck')
script = prelude + '\n' + body
s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()
p = subprocess.Popen(['redis-server', '--port', str(port), '--save', '', '--appendonly', 'no'], stdout=subprocess.DEVNULL)
try:
    time.sleep(0.5)
    cli = ['redis-cli', '-p', str(port)]
    sha = subprocess.check_output(cli + ['SCRIPT', 'LOAD', script]).decode().strip()
    def resp(args):
        out = ['*%d\r\n' % len(args)]
        for a in args:
            a = str(a); out.append('$%d\r\n%s\r\n' % (len(a.encode()), a))
        return ''.join(out)
    devices, batch, calls = int(sys.argv[1]), 200, int(sys.argv[2])
    grouped = len(sys.argv) > 3 and sys.argv[3] == 'grouped'
    cmds = []
    for c in range(calls):
        keys, intervals, per = [], [], []
        index = {}
        def key(k, iv):
            if k not in index:
                keys.append(k); intervals.append(iv); index[k] = len(keys)
            return index[k]
        for j in range(batch):
            d = ((c * batch + j) // 100 if grouped else c * batch + j) % devices
            a = key('herald:budget:app:shop:s', 100)        # 10,000 a second: never holds
            b = key('herald:budget:device:tok-%d:s' % d, 200000 if grouped else 1000)   # 5 or 1,000 a second per device
            per += [2, b, a]
        # the app's budget keeps a calendar (declared after the budgets), the devices' do not
        calendars = ['herald:budgetcal:app:shop:s']
        per_budget = []
        for k, iv in zip(keys, intervals):
            per_budget += [iv, len(keys) + 1 if k == 'herald:budget:app:shop:s' else 0]
        cmds.append(resp(['EVALSHA', sha, len(keys) + 1] + keys + calendars + [batch, len(keys)] + per_budget + per))
    subprocess.run(cli + ['CONFIG', 'RESETSTAT'], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(cli + ['--pipe'], input=''.join(cmds).encode(), check=True, stdout=subprocess.DEVNULL)
    stats = subprocess.check_output(cli + ['INFO', 'commandstats']).decode()
    m = re.search(r'cmdstat_evalsha:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)', stats)
    n, usec = int(m.group(1)), int(m.group(2))
    print('grouped ' if grouped else '', end='')
    print('devices=%d batches=%d jobs=%d evalsha usec/call=%.1f usec/job=%.2f' % (devices, n, n * batch, usec / n, usec / (n * batch)))
finally:
    p.terminate(); p.wait()
