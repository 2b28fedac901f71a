"""Export the JSON contract's schema and generate the extension's TypeScript types from it.

A script of the repository, not part of the package. From the repository root::

    .venv/bin/python scripts/gen_types.py          # write both files
    .venv/bin/python scripts/gen_types.py --check  # exit 1 when either differs (drift)

It writes ``skillnb_magics/skillnb/core/contract.schema.json`` from the pydantic models
(:func:`skillnb.core.contract.shapes.contract_schema`) and ``labextension/src/types.ts`` from that
schema with json-schema-to-typescript (``labextension/scripts/gen-types.mjs``; it needs node
and ``jlpm install`` in ``labextension/``). ``--schema-only`` leaves the TypeScript alone.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "skillnb_magics" / "skillnb" / "core" / "contract.schema.json"
TYPES = ROOT / "labextension" / "src" / "types.ts"
GENERATOR = ROOT / "labextension" / "scripts" / "gen-types.mjs"
REGENERATE = ".venv/bin/python scripts/gen_types.py"


class GeneratorMissing(RuntimeError):
    """Node or json-schema-to-typescript is not installed, so no TypeScript can be made."""


def schema_text() -> str:
    """The contract's JSON Schema, as the committed file holds it."""
    sys.path.insert(0, str(ROOT / "skillnb_magics"))
    from skillnb.core.contract.shapes import contract_schema

    return json.dumps(contract_schema(), indent=2, ensure_ascii=False) + "\n"


def types_text(schema: str) -> str:
    """The TypeScript that json-schema-to-typescript makes of ``schema``.

    Raises:
        GeneratorMissing: without node or the extension's node_modules.

    """
    node = shutil.which("node")
    modules = ROOT / "labextension" / "node_modules" / "json-schema-to-typescript"
    if node is None or not modules.is_dir():
        raise GeneratorMissing(
            "generating labextension/src/types.ts needs node and `jlpm install` in labextension/"
        )
    done = subprocess.run(  # noqa: S603 - a fixed script of this repository
        [node, str(GENERATOR)],
        input=schema,
        capture_output=True,
        text=True,
        cwd=GENERATOR.parent,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{GENERATOR.name} failed:\n{done.stderr[-4000:]}")
    return done.stdout


def drift(generated: dict[Path, str]) -> list[str]:
    """One line per file whose committed text differs from ``generated``."""
    problems = []
    for path, text in generated.items():
        committed = path.read_text(encoding="utf-8") if path.exists() else None
        if committed != text:
            state = "is missing" if committed is None else "differs from the models"
            problems.append(f"{path.relative_to(ROOT)} {state}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) the schema and the TypeScript types."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--schema-only", action="store_true", help="leave types.ts alone")
    args = parser.parse_args(argv)
    schema = schema_text()
    generated = {SCHEMA: schema}
    if not args.schema_only:
        generated[TYPES] = types_text(schema)
    if args.check:
        problems = drift(generated)
        if problems:
            sys.stderr.write(
                "the JSON contract drifted from skillnb.core.contract.shapes:\n  "
                + "\n  ".join(problems)
                + f"\nregenerate with `{REGENERATE}` and commit the result\n"
            )
            return 1
        return 0
    for path, text in generated.items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
