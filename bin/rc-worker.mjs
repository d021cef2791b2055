#!/usr/bin/env node
import '../dist/worker.js';
