// Parse PowerShell files with tree-sitter's PowerShell grammar; print one JSON object:
// {"<file>": ["<line>:<col> ERROR|MISSING <text>", ...]} (an empty list: the file parses cleanly).
// Usage: node ps_parse.mjs <tools dir holding node_modules> FILE...
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [tools, ...files] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(tools), "node_modules", "x.js"));
// tree-sitter-powershell's entry is an ES module with top-level await: import, not require.
const Parser = (await import(pathToFileURL(require.resolve("tree-sitter")))).default;
const PowerShell = (await import(pathToFileURL(require.resolve("tree-sitter-powershell")))).default;
const parser = new Parser();
parser.setLanguage(PowerShell);

const out = {};
for (const f of files) {
  const text = readFileSync(f, "utf8");
  // The node bindings parse in chunks; a callback input avoids their 32 KiB string limit.
  const tree = parser.parse((i) => text.slice(i, i + 4096));
  const problems = [];
  const walk = (n) => {
    if (n.isError || n.isMissing) {
      const p = n.startPosition;
      problems.push(`${p.row + 1}:${p.column + 1} ${n.isMissing ? "MISSING" : "ERROR"} ${JSON.stringify(n.text.slice(0, 60))}`);
    }
    if (n.hasError || n.isMissing) for (const c of n.children) walk(c);
  };
  walk(tree.rootNode);
  out[f] = problems;
}
console.log(JSON.stringify(out));
