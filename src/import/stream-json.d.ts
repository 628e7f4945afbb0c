// stream-json maps its subpaths through package.json "exports", which this project's module
// resolution (node10) does not read: point the type checker at the file the runtime loads.
declare module 'stream-json/assembler.js' {
  import Assembler from 'stream-json/src/assembler';
  export = Assembler;
}
