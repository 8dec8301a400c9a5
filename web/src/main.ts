// Entry of the dashboard bundle: defining <registry-app> pulls in every other element.
import './registry-app.js';
