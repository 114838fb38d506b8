// edgetool demo page (an ES module, after the classic tfjs scripts): start it and expose window.edgetool.
// The page is split into modules: main.js wires config.js, engines/, ui/, postprocess.js and api.js together.
import { createApi } from './api.js';
import { start } from './main.js';

window.edgetool = createApi(start());
