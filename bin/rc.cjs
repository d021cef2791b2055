#!/usr/bin/env node
'use strict';
require('../dist/rc.cjs');
