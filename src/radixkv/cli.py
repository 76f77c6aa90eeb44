"""The ``radixkv`` command line.

``radixkv demo`` runs :func:`radixkv.demo.main`. Subcommand modules are imported only when
their subcommand runs, so ``radixkv --help`` stays fast and needs nothing beyond the standard
library.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

__all__ = ["main"]

_EXIT_USAGE = 2


class _UsageError(Exception):
    """Raised instead of argparse's own ``sys.exit`` so :func:`main` can return a code."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _build_parser() -> _Parser:
    parser = _Parser(
        prog="radixkv",
        description="radixkv: a radix-tree prefix cache for LLM serving.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    commands.add_parser("demo", help="run a short demonstration of the prefix cache")
    return parser


def _run_demo() -> int:
    demo = importlib.import_module("radixkv.demo")
    code: int = demo.main()
    return code


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (``sys.argv[1:]`` when ``None``); return the exit code.

    No subcommand, an unknown one or a bad option prints the help to stderr and returns 2.
    ``--help`` prints the help to stdout and returns 0. Never calls ``sys.exit`` itself.
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        print(f"radixkv: error: {exc}", file=sys.stderr)
        parser.print_help(sys.stderr)
        return _EXIT_USAGE
    except SystemExit as exc:  # --help: argparse printed the help and asked to exit
        return exc.code if isinstance(exc.code, int) else 0

    if args.command == "demo":
        return _run_demo()
    parser.print_help(sys.stderr)
    return _EXIT_USAGE
