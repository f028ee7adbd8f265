"""The JSON Schemas under docs/, ready to validate the CLI's documents."""

import json
from pathlib import Path

import jsonschema
from referencing import Registry, Resource

DOCS = Path(__file__).parents[2] / "docs"


def fix_schema_validator() -> jsonschema.Draft202012Validator:
    """docs/doctor-fix.schema.json, its reports checked against doctor-report.schema.json."""
    report, fix = (json.loads((DOCS / f"doctor-{name}.schema.json").read_text())
                   for name in ("report", "fix"))  # fmt: skip
    registry = Registry().with_resource(report["$id"], Resource.from_contents(report))
    return jsonschema.Draft202012Validator(fix, registry=registry)


def plan_schema_validator() -> jsonschema.Draft202012Validator:
    """docs/plan.schema.json: `jetson-env plan --json`."""
    schema = json.loads((DOCS / "plan.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def fleet_schema_validator() -> jsonschema.Draft202012Validator:
    """docs/doctor-fleet.schema.json, its hosts' reports against doctor-report.schema.json."""
    report, fleet = (json.loads((DOCS / f"doctor-{name}.schema.json").read_text())
                     for name in ("report", "fleet"))  # fmt: skip
    registry = Registry().with_resource(report["$id"], Resource.from_contents(report))
    return jsonschema.Draft202012Validator(fleet, registry=registry)


def bundle_schema_validator() -> jsonschema.Draft202012Validator:
    """docs/bundle.schema.json: `jetson-env bundle DIR --json`, its targets, manual items and
    apt checked against bundle-manifest.schema.json's (draft 7)."""
    made, manifest = (json.loads((DOCS / f"{name}.schema.json").read_text())
                      for name in ("bundle", "bundle-manifest"))  # fmt: skip
    registry = Registry().with_resource(manifest["$id"], Resource.from_contents(manifest))
    return jsonschema.Draft202012Validator(made, registry=registry)
