// The etag stage: a page's strong ETag from its documents' digests (the join stage's output)
// and its Link header. One implementation for every source, kept in domain/digest.ts beside
// the digests it hashes (the result cache and the routes use it too); named here so that the
// pipeline's five stages can be read in one folder.
export { pageEtag } from '../../domain/digest.js';
