"""Validates job examples against schemas/job.schema.json with python3-jsonschema (Draft 2020-12).

usage: check_job_schema.py SCHEMA [JOBS.jsonl ...]
Checks examples/sample-jobs.jsonl, every `LPUSH <key> '<job>'` and ```json job of README.md and docs/*.md without
placeholders (<...>, ...), and each line of the given files; prints "<checked> <invalid>" and each invalid one.
Exits 1 if any is invalid, or if the control (a job with a non-hex token) passes: a schema that accepts
everything would otherwise look fine.
"""
import glob, json, re, sys
import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
checked, invalid = 0, []

def check(where, text):
    global checked
    try:
        job = json.loads(text)
    except ValueError:
        return
    if not isinstance(job, dict) or not ({"token", "tokens", "channel", "message", "payload"} & job.keys()):
        return
    if re.search(r"<[^>]*>|\.\.\.|\u2026", text):
        return
    checked += 1
    errors = [e.message for e in validator.iter_errors(job)]
    if errors:
        invalid.append("%s: %s: %s" % (where, errors[0], text.strip()[:120]))

for n, line in enumerate(open("examples/sample-jobs.jsonl"), 1):
    check("examples/sample-jobs.jsonl:%d" % n, line)
for path in ["README.md"] + sorted(glob.glob("docs/*.md")):
    text = open(path).read()
    for m in re.finditer(r"LPUSH\s+\S+\s+'(\{.*?\})'", text, re.S):
        check(path, m.group(1))
    for m in re.finditer(r"```json\n(.*?)```", text, re.S):
        for piece in [m.group(1)] + m.group(1).splitlines():
            check(path, piece)
for extra in sys.argv[2:]:
    for n, line in enumerate(open(extra), 1):
        check("%s:%d" % (extra, n), line)

if validator.is_valid({"token": "not-hex", "payload": {}}):
    print("the control job with a non-hex token passed: the schema checks nothing")
    sys.exit(1)
print(checked, len(invalid))
for line in invalid:
    print(line)
sys.exit(1 if invalid else 0)
