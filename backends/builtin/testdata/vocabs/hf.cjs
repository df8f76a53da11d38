// Hugging Face's ids for each string of a corpus, without special tokens,
// by transformers.js (as npm's @lenml/tokenizers packages carry it):
//   node hf.cjs PACKAGE CORPUS.jsonl > ids.json
// run where PACKAGE is installed.
const fs = require("fs");
const tokenizer = require(require.resolve(process.argv[2], { paths: [process.cwd()] })).fromPreTrained();
const strings = fs.readFileSync(process.argv[3], "utf8").split("\n").filter((line) => line.length > 0);
const ids = strings.map((line) => tokenizer.encode(JSON.parse(line), { add_special_tokens: false }));
process.stdout.write(JSON.stringify(ids) + "\n");
