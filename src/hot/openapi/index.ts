// The openapi room's entry: the document served at /openapi.json and its route.
export { openApiDocument } from './document.js';
export { registerOpenApi } from './routes.js';
