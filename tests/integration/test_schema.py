"""config.schema.json and coil's parser accept and reject the same configs.

Every bundle config and tests/configs/valid/*.json must validate; every
tests/configs/invalid/*.json must fail the schema, and `coil create` must refuse
it with the JSON path from its sibling .expect file and leave no state behind.
"""
import glob
import json
import os
import re
import tempfile

import jsonschema

import harness

SCHEMA_PATH = os.path.join(harness.REPO, "config.schema.json")
CONFIGS = os.path.join(harness.REPO, "tests", "configs")


def _validator():
    with open(SCHEMA_PATH) as f:
        return jsonschema.Draft202012Validator(json.load(f))


def _load(path):
    with open(path) as f:
        return json.load(f)


def _invalid_cases():
    """(name, config path, expected substring) for each invalid config."""
    cases = []
    for path in sorted(glob.glob(os.path.join(CONFIGS, "invalid", "*.json"))):
        with open(path[: -len(".json")] + ".expect") as f:
            cases.append((os.path.basename(path)[: -len(".json")], path,
                          f.read().strip()))
    return cases


def _json_path(parts):
    """A jsonschema error path written the way coil writes JSON paths."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += "[%d]" % p
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p):
            out += ("." if out else "") + p
        else:
            out += '["%s"]' % p
    return out or "(root)"


def test_schema_is_valid_2020_12():
    with open(SCHEMA_PATH) as f:
        schema = json.load(f)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_valid_configs_match_schema():
    paths = sorted(glob.glob(os.path.join(harness.REPO, "bundles", "**",
                                          "config.json"), recursive=True))
    paths += sorted(glob.glob(os.path.join(CONFIGS, "valid", "*.json")))
    assert len(paths) >= 2, "no valid configs found"
    v = _validator()
    bad = []
    for path in paths:
        for e in v.iter_errors(_load(path)):
            bad.append("%s: %s: %s" % (os.path.relpath(path, harness.REPO),
                                       _json_path(e.absolute_path), e.message))
    assert not bad, "\n".join(bad)


def test_invalid_configs_have_expectations():
    cases = _invalid_cases()
    assert len(cases) >= 15, "only %d invalid configs" % len(cases)
    for name, _, expect in cases:
        assert expect and "\n" not in expect, "%s.expect: one line" % name
    stray = [p for p in glob.glob(os.path.join(CONFIGS, "invalid", "*.expect"))
             if not os.path.exists(p[: -len(".expect")] + ".json")]
    assert not stray, "expect files without a config: %s" % stray


def test_invalid_configs_fail_schema():
    v = _validator()
    bad = []
    for name, path, expect in _invalid_cases():
        errors = list(v.iter_errors(_load(path)))
        if not errors:
            bad.append("%s: accepted by the schema" % name)
            continue
        # The schema must find the problem where coil does: its error path
        # (the object, for a missing property) leads to coil's path.
        where = [_json_path(e.absolute_path) for e in errors]
        if not any(w == "(root)" or expect.startswith(w) for w in where):
            bad.append("%s: schema errors at %s, coil expects %r"
                       % (name, where, expect))
    assert not bad, "\n".join(bad)


def test_invalid_configs_fail_coil_create():
    bad = []
    for name, path, expect in _invalid_cases():
        root = harness.new_root()
        cid = "schema-" + name
        with tempfile.TemporaryDirectory(prefix="coil-bundle-") as bundle:
            os.mkdir(os.path.join(bundle, "rootfs"))
            with open(path) as src, \
                    open(os.path.join(bundle, "config.json"), "w") as dst:
                dst.write(src.read())
            r = harness.coil("create", "--bundle", bundle, cid, root=root)
        if r.returncode == 0:
            bad.append("%s: create succeeded" % name)
            harness.coil("delete", "--force", cid, root=root)
            continue
        if expect not in r.stderr:
            bad.append("%s: stderr lacks %r: %r" % (name, expect, r.stderr))
        left = [e for e in (os.listdir(root) if os.path.isdir(root) else [])
                if cid in e]
        if left:
            bad.append("%s: state left in %s: %s" % (name, root, left))
    assert not bad, "\n".join(bad)
