#!/usr/bin/env node
// Entry point of the `mdm-console` command; the CLI itself is TypeScript run by Node's type stripping.
import '../src-main/cli/main.ts';
