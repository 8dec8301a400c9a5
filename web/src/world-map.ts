// <world-map>: countries drawn offline from world-atlas (Natural Earth 1:110m, bundled by
// Vite; no tile server, no network) with d3-geo, plus a marker per point. Country paths are
// projected once per page load and shared by every instance.
import { LitElement, css, html, svg } from 'lit';
import { geoNaturalEarth1, geoPath, geoGraticule10 } from 'd3-geo';
import { feature } from 'topojson-client';
import type { GeometryCollection, Topology } from 'topojson-specification';
import countries110m from 'world-atlas/countries-110m.json';
import { shared } from './lib/theme.js';
import type { MapPoint } from './lib/types.js';

const W = 960;
const H = 500;

const projection = geoNaturalEarth1().fitExtent(
  [
    [4, 4],
    [W - 4, H - 4],
  ],
  { type: 'Sphere' },
);
const path = geoPath(projection);

let cached: { countries: string[]; sphere: string; graticule: string } | null = null;
function base() {
  if (!cached) {
    const topo = countries110m as unknown as Topology<{ countries: GeometryCollection }>;
    const fc = feature(topo, topo.objects.countries);
    cached = {
      countries: fc.features.map((f) => path(f) ?? '').filter((d) => d !== ''),
      sphere: path({ type: 'Sphere' }) ?? '',
      graticule: path(geoGraticule10()) ?? '',
    };
  }
  return cached;
}

export class WorldMap extends LitElement {
  static override properties = {
    points: { attribute: false },
    /** a single sandbox's map: a larger, pulsing marker */
    single: { type: Boolean },
  };

  declare points: MapPoint[];
  declare single: boolean;

  constructor() {
    super();
    this.points = [];
    this.single = false;
  }

  override render() {
    const b = base();
    const r = this.single ? 7 : 4.5;
    return html`
      <svg viewBox="0 0 ${W} ${H}" role="img" aria-label="World map with ${this.points.length} marked sandbox${this.points.length === 1 ? '' : 'es'}">
        <path class="sphere" d=${b.sphere}></path>
        <path class="graticule" d=${b.graticule}></path>
        <g class="countries">${b.countries.map((d) => svg`<path class="country" d=${d}></path>`)}</g>
        <g class="markers">
          ${this.points.map((p) => {
            const xy = projection([p.lon, p.lat]);
            if (!xy) return null;
            const dot = svg`<circle class="marker ${this.single ? 'focus' : ''}" cx=${xy[0].toFixed(1)} cy=${xy[1].toFixed(1)} r=${r}><title>${p.label}</title></circle>`;
            return p.href ? svg`<a href=${p.href}>${dot}</a>` : dot;
          })}
        </g>
      </svg>
    `;
  }

  static override styles = [
    shared,
    css`
      :host {
        display: block;
      }
      svg {
        width: 100%;
        height: auto;
        display: block;
      }
      .sphere {
        fill: #eaf2fb;
        stroke: #c9d6e4;
      }
      .graticule {
        fill: none;
        stroke: #d7e2ee;
        stroke-width: 0.5;
      }
      .country {
        fill: #d5dbe2;
        stroke: #fff;
        stroke-width: 0.5;
      }
      .marker {
        fill: #d9480f;
        stroke: #fff;
        stroke-width: 1.5;
      }
      .marker.focus {
        animation: pulse 1.6s ease-in-out infinite;
      }
      @keyframes pulse {
        50% {
          stroke-width: 6;
          stroke: rgba(217, 72, 15, 0.3);
        }
      }
    `,
  ];
}

declare global {
  interface HTMLElementTagNameMap {
    'world-map': WorldMap;
  }
}
customElements.define('world-map', WorldMap);
