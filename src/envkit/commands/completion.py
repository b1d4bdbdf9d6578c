"""``envkit completion SHELL``: a completion script for bash, zsh, fish or PowerShell, from the CLI's parser.

bash and zsh scripts are shtab's (static: no Python runs on TAB); fish and PowerShell scripts are
written here from the same walk of the parser (:func:`nodes`), since shtab has no generator for
them. Every script completes the commands, their options, choices (``--target`` names) and, where a
profile goes, ``*.yaml`` / ``*.yml`` files.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser(prog="envkit"); sub = p.add_subparsers()
    >>> g = sub.add_parser("generate", help="render"); _ = g.add_argument("--shell", choices=["sh", "ksh"])
    >>> [(n.words, [o.flags for o in n.options]) for n in nodes(p)]
    [((), [['-h', '--help']]), (('generate',), [['-h', '--help'], ['--shell']])]
    >>> 'complete -c envkit -n "__envkit_at generate" -l shell -x -a "sh ksh"' in fish_script(p)
    True
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import TextIO

from envkit.commands.arguments import PROFILE_COMPLETION
from envkit.profile.discovery import PROFILE_SUFFIXES

SHELLS = ("bash", "zsh", "fish", "powershell")
PROG = "envkit"


@dataclass
class Option:
    """One option: its flags, help, choices (empty: any value, or none) and whether it takes a value."""

    flags: list[str]
    help: str
    choices: list[str]
    takes_value: bool
    profile: bool


@dataclass
class Node:
    """A command (``()`` is envkit itself): its options, subcommands and whether a PROFILE positional follows."""

    words: tuple[str, ...]
    options: list[Option] = field(default_factory=list)
    commands: dict[str, str] = field(default_factory=dict)  # name -> help
    profile: bool = False
    values: list[str] = field(default_factory=list)  # the choices of its positional arguments


def _profile(action: argparse.Action) -> bool:
    # The harness's stdlib-only parser cannot mark its --profile; its dest says what it is.
    return getattr(action, "completes", None) == PROFILE_COMPLETION or action.dest == "profile"


def nodes(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> list[Node]:
    """Every command reachable from ``parser``, depth first, the parser's own first."""
    node, below = Node(words), []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, subparser in action.choices.items():
                node.commands[name] = helps.get(name, "")
                below += nodes(subparser, words + (name,))
        elif action.option_strings:
            node.options.append(Option(list(action.option_strings), (action.help or "").replace("%%", "%"),
                                       [str(c) for c in action.choices or ()], action.nargs != 0, _profile(action)))
        elif _profile(action):
            node.profile = True
        else:
            node.values += [str(c) for c in action.choices or ()]
    return [node, *below]


def _bash_zsh(parser: argparse.ArgumentParser, shell: str) -> str:
    import shtab  # here, not at the top: building the CLI's parser imports every command module

    # Readline inserts a COMPREPLY entry as it stands, so a name like ``z$(touch x).yaml`` or
    # ``my profile.yaml`` must already be shell-quoted: ``printf %q`` is bash's own quoting, and it
    # keeps a newline in a name on one line for shtab's ``read`` loop. The function's name must not
    # match shtab's ``_(file|dir|glob)`` test, which would add ``compopt -o filenames`` and have
    # readline quote the quoted text again (bash(1), "Programmable Completion", -o filenames).
    preamble = {"bash": ("_shtab_envkit_profiles() {\n  local name\n"
                         "  while IFS= read -r name; do printf '%q\\n' \"$name\"; done < <(\n"
                         "    compgen -d -- \"$1\"\n"
                         + "".join(f"    compgen -f -X '!*{s}' -- \"$1\"\n" for s in PROFILE_SUFFIXES)
                         + "  )\n}\n"),
                "zsh": ""}[shell]
    complete = {"bash": "_shtab_envkit_profiles",
                "zsh": "_files -g '(" + "|".join(f"*{s}" for s in PROFILE_SUFFIXES) + ")'"}
    for action in _all_actions(parser):
        if _profile(action):
            action.complete = complete  # type: ignore[attr-defined]
    return shtab.complete(parser, shell=shell, preamble=preamble)


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    found = []
    for action in parser._actions:
        found.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                found += _all_actions(subparser)
    return found


def _fish_quote(text: str) -> str:
    r"""A fish double-quoted string.

    >>> _fish_quote('say "hi" $HOME')
    '"say \\"hi\\" \\$HOME"'
    """
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def fish_script(parser: argparse.ArgumentParser) -> str:
    """fish ``complete`` lines; ``__envkit_at WORDS`` is true when the command line is at exactly that command."""
    profiles = "(__envkit_profiles)"
    pattern = "(" + "|".join(s.replace(".", "\\.") for s in PROFILE_SUFFIXES) + ")$"
    lines = [f"# fish completion for {PROG} (envkit completion fish)",
             "function __envkit_at",
             "    set -l words (commandline -opc)",
             "    set -e words[1]",
             "    set -l path",
             "    for w in $words",
             "        string match -q -- '-*' $w; and continue",
             "        set -a path $w",
             "    end",
             "    set -l n (count $argv)",
             "    test (count $path) -ge $n; or return 1",
             "    test \"$path[1..$n]\" = \"$argv\"",
             "end",
             "function __envkit_profiles",
             "    for f in (commandline -ct)*",  # a glob matching nothing is empty in `for`
             "        if test -d $f",
             "            echo $f/",
             f"        else if string match -qr -- '{pattern}' $f",
             "            echo $f",
             "        end",
             "    end",
             "end",
             f"complete -c {PROG} -f"]
    all_nodes = nodes(parser)
    for node in all_nodes:
        at = " ".join(node.words)
        cond = f'-n "__envkit_at {at}"' if at else '-n "__fish_use_subcommand"'
        if at and node.commands:  # not once one of its own subcommands is on the line
            cond = f'-n "__envkit_at {at}; and not __fish_seen_subcommand_from {" ".join(node.commands)}"'
        for name, text in node.commands.items():
            lines.append(f"complete -c {PROG} {cond} -a {name} -d {_fish_quote(text)}")
        for opt in node.options:
            spec = " ".join(f"-l {f[2:]}" if f.startswith("--") else f"-s {f[1:]}" for f in opt.flags)
            if opt.choices:
                spec += f" -x -a {_fish_quote(' '.join(opt.choices))}"
            elif opt.profile:
                spec += f' -x -a "{profiles}"'
            elif opt.takes_value:
                spec += " -r -F"
            lines.append(f"complete -c {PROG} {cond} {spec} -d {_fish_quote(opt.help)}")
        if node.profile:
            lines.append(f'complete -c {PROG} {cond} -a "{profiles}"')
        if node.values:
            lines.append(f"complete -c {PROG} {cond} -a {_fish_quote(' '.join(node.values))}")
    return "\n".join(lines) + "\n"


_POWERSHELL = r"""# PowerShell completion for envkit (envkit completion powershell)
$script:EnvkitTree = @'
TREE
'@ | ConvertFrom-Json

Register-ArgumentCompleter -Native -CommandName envkit, envkit.exe -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    $words = @($commandAst.CommandElements | Select-Object -Skip 1 | ForEach-Object { $_.ToString() })
    if ($wordToComplete -ne '' -and $words.Count -gt 0) { $words = @($words | Select-Object -SkipLast 1) }
    $path = @('envkit')
    foreach ($w in $words) {
        $key = (@($path + $w) -join ' ')
        if (-not $w.StartsWith('-') -and $script:EnvkitTree.PSObject.Properties[$key]) { $path += $w }
    }
    $node = $script:EnvkitTree.PSObject.Properties[(@($path) -join ' ')].Value
    $previous = if ($words.Count -gt 0) { $words[-1] } else { '' }
    $option = $node.options | Where-Object { $_.flags -contains $previous } | Select-Object -First 1
    $results = @()
    if ($option -and $option.takes_value) {
        if ($option.choices.Count -gt 0) {
            $results = $option.choices | Where-Object { $_ -like "$wordToComplete*" } |
                ForEach-Object { [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_) }
        } elseif ($option.profile) {
            $results = Get-ChildItem -Path "$wordToComplete*" -Include *.yaml, *.yml -File -ErrorAction SilentlyContinue |
                ForEach-Object { [System.Management.Automation.CompletionResult]::new($_.Name, $_.Name, 'ProviderItem', $_.FullName) }
        } else {
            return  # a value of another kind: PowerShell's own path completion
        }
        return $results
    }
    if ($wordToComplete.StartsWith('-')) {
        foreach ($o in $node.options) {
            foreach ($f in $o.flags) {
                if ($f -like "$wordToComplete*") {
                    $results += [System.Management.Automation.CompletionResult]::new($f, $f, 'ParameterName', $o.help)
                }
            }
        }
        return $results
    }
    foreach ($v in $node.values) {
        if ($v -like "$wordToComplete*") {
            $results += [System.Management.Automation.CompletionResult]::new($v, $v, 'ParameterValue', $v)
        }
    }
    foreach ($c in $node.commands.PSObject.Properties) {
        if ($c.Name -like "$wordToComplete*") {
            $results += [System.Management.Automation.CompletionResult]::new($c.Name, $c.Name, 'Command', $c.Value)
        }
    }
    if ($node.profile) {
        $results += Get-ChildItem -Path "$wordToComplete*" -Include *.yaml, *.yml -File -ErrorAction SilentlyContinue |
            ForEach-Object { [System.Management.Automation.CompletionResult]::new($_.Name, $_.Name, 'ProviderItem', $_.FullName) }
    }
    return $results
}
"""


def powershell_script(parser: argparse.ArgumentParser) -> str:
    """A ``Register-ArgumentCompleter`` for envkit over the parser's tree, embedded as JSON."""
    # Keyed by the command line's words, envkit's own first: ConvertFrom-Json refuses an empty key.
    tree = {" ".join((PROG, *n.words)): {"commands": n.commands, "profile": n.profile, "values": n.values,
                                 "options": [{"flags": o.flags, "help": o.help, "choices": o.choices,
                                              "takes_value": o.takes_value, "profile": o.profile} for o in n.options]}
            for n in nodes(parser)}
    text = json.dumps(tree, indent=1, sort_keys=True)
    assert "'@" not in text  # it would end PowerShell's here-string
    return _POWERSHELL.replace("TREE", text)


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``shell`` (one of :data:`SHELLS`) for ``parser``."""
    if shell in ("bash", "zsh"):
        return _bash_zsh(parser, shell)
    return fish_script(parser) if shell == "fish" else powershell_script(parser)


def run(parser: argparse.ArgumentParser, shell: str, *, out: TextIO) -> int:
    print(script(parser, shell), end="", file=out)
    return 0


# ---------------------------------------------------------------- command line (envkit.commands' contract)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help=f"the shell: {', '.join(SHELLS)}")


def main(args: argparse.Namespace) -> int:
    return run(args.root_parser, args.shell, out=sys.stdout)
