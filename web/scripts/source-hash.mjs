// Writes crates/console/dist/SOURCE_SHA256: a digest of everything the bundle is built from.
// A Rust test (crates/console) computes the same digest from web/ and fails when the
// committed bundle was built from other sources. The digest is SHA-256 over, for each file
// in path order, "<path relative to web/>\n<SHA-256 of its bytes, hex>\n".
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT_FILES = ['docs.html', 'index.html', 'package-lock.json', 'package.json', 'tsconfig.json', 'vite.config.ts'];

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

export function sourceFiles() {
  const files = [...ROOT_FILES.map((f) => join(web, f)), ...walk(join(web, 'src'))];
  return files.map((f) => relative(web, f).split('\\').join('/')).sort();
}

export function sourceDigest() {
  const outer = createHash('sha256');
  for (const path of sourceFiles()) {
    const inner = createHash('sha256').update(readFileSync(join(web, path))).digest('hex');
    outer.update(`${path}\n${inner}\n`);
  }
  return outer.digest('hex');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const digest = sourceDigest();
  writeFileSync(join(web, '../crates/console/dist/SOURCE_SHA256'), `${digest}\n`);
  console.log(`SOURCE_SHA256 ${digest}`);
}
