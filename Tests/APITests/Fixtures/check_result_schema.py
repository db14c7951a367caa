"""Validates result entries against schemas/result.schema.json with python3-jsonschema (Draft 2020-12).

usage: check_result_schema.py SCHEMA [ENTRIES.jsonl ...]
Checks every result entry (a JSON object with "outcome" and "attempt", at any depth) in the ```json blocks of
README.md and docs/*.md ("…" standing for any text) and each line of the given files (an entry, or an answer
holding entries); prints "<checked> <invalid> <outcomes seen>" and each invalid one. Exits 1 if any is invalid,
or if the controls pass (an unknown outcome, a missing worker): a schema that accepts everything would look fine.
"""
import glob, json, re, sys
import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
checked, invalid, outcomes = 0, [], set()

def entries(value):
    if isinstance(value, dict):
        if "outcome" in value and "attempt" in value:
            yield value
        for v in value.values():
            yield from entries(v)
    elif isinstance(value, list):
        for v in value:
            yield from entries(v)

def check(where, text):
    global checked
    try:
        value = json.loads(text.replace("\u2026", "x"))
    except ValueError:
        return
    for entry in entries(value):
        checked += 1
        outcomes.add(entry["outcome"])
        errors = [e.message for e in validator.iter_errors(entry)]
        if errors:
            invalid.append("%s: %s: %s" % (where, errors[0], json.dumps(entry)[:160]))

for path in ["README.md"] + sorted(glob.glob("docs/*.md")):
    for m in re.finditer(r"```json\n(.*?)```", open(path).read(), re.S):
        check(path, m.group(1))
for extra in sys.argv[2:]:
    for n, line in enumerate(open(extra), 1):
        check("%s:%d" % (extra, n), line)

good = {"id": "a", "outcome": "delivered", "status": "200", "attempt": "1", "worker": "w"}
if not validator.is_valid(good) or validator.is_valid(dict(good, outcome="sent")) or validator.is_valid({k: v for k, v in good.items() if k != "worker"}):
    print("the controls went the wrong way: the schema checks nothing (or refuses a plain delivered entry)")
    sys.exit(1)
print(checked, len(invalid), ",".join(sorted(outcomes)))
for line in invalid:
    print(line)
sys.exit(1 if invalid else 0)
