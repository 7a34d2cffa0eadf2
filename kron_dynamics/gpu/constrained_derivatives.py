# Copyright 2026 kron_dynamics developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The derivatives of contact-constrained forward dynamics per row (numba-cuda source).

The CPU's ``kernels.constrained_dynamics_derivatives`` (its readable reference,
``algorithms.constrained_dynamics_derivatives``, states the formulas) for one robot and one
count m of contact rows: the contacts' J_c, da_c/dq, da_c/dv and d(J_c^T lambda)/dq along
each contact's path from the links' poses (the unconstrained tree's coordinates, then
projected by P where mimic joints couple them), then the KKT system
[[M, J_c^T], [J_c, 0]] [X; Y] = [(dQ - dtau/dq, -dtau/dv, I); (-da_c/dq, -da_c/dv, 0)] by the
Schur complement on M = L L^T (above ``codegen.UNROLLED_SOLVE`` coordinates M = L^T L along
the tree): X = (dv'/dq, dv'/dv, dv'/dtau), Y = -(dlambda/dq, ...).
The contacts (their paths, points, frames) and P (per row its one non-zero: column PCOL,
value PVAL) are arrays the kernel reads.
"""

from .codegen import (_looped_factor, _packed, _Robot, _Vec, _Writer, factored_mass_matrix,
                      tree_factored_mass_matrix, tree_tables)
from .contacts import _min_norm

# the CPU's refusal of redundant contacts: J_c M^-1 J_c^T with a condition number above 1e10
DELASSUS_RCOND = 1e-10


def _block(depth: int, build) -> list:
    """Return the straight lines ``build(writer, vectors)`` writes, indented ``depth`` levels."""
    w = _Writer()
    build(w, _Vec(w))
    return ['    ' * (depth - 1) + line for line in w.lines]


def _v3(array: str, first: str) -> list:
    """Return the expressions of array[first], array[first + 1], array[first + 2]."""
    return [f'{array}[{first} + {k}]' for k in range(3)]


def _mcross(V, a: tuple, b: tuple) -> tuple:
    """Return the motion cross product (w, v) x (w2, v2) = (w x w2, w x v2 + v x w2)."""
    return V.cross(a[0], b[0]), V.add(V.cross(a[0], b[1]), V.cross(a[1], b[0]))


def _in_frame(V, R: list, p: list, m: tuple) -> tuple:
    """Return a root-frame motion (w, v) at the root origin in the frame (R, p)."""
    return V.mtv(R, m[0]), V.mtv(R, V.add(m[1], V.cross(m[0], p)))


def _neg3(V, x: list) -> list:
    return V.scale(x, '-1.0')


def _terms_lines(nb: int, nf: int) -> list:
    """
    Return the lines writing every contact's rows of Jf, AQ, AV (m x nf) and adding to DQF.

    The CPU's ``_contact`` per contact c (its path PATHS[c, :LENGTHS[c]]), in local arrays:
    S (6 per coordinate, angular first), PAR (Vp, Ap, S' per coordinate), OWN (the velocity
    of the coordinate's body).
    """
    R = [[f'T{r}{c}' for c in range(3)] for r in range(3)]
    p = ['pc0', 'pc1', 'pc2']

    def column(w, V):          # S_j's motion in the root frame
        e = [f'AXES[cj, {2 + k}]' for k in range(3)]
        L = [[f'POSES[t, li, {r}, {c}]' for c in range(3)] for r in range(3)]
        u = V.mv(L, e)
        tl = V.cross([f'POSES[t, li, {r}, 3]' for r in range(3)], u)
        for k in range(3):
            w.set(f'S[6 * j + {k}]', f'{u[k]} if turns else 0.0')
            w.set(f'S[6 * j + {3 + k}]', f'{tl[k]} if turns else {u[k]}')

    def frame(w, V):
        for r in range(3):
            for c in range(3):
                w.set(f'T{r}{c}', f'POSES[t, ROWS[c], {r}, {c}]')
        pp = V.add(V.mv(R, [f'POINTS[c, {k}]' for k in range(3)]),
                   [f'POSES[t, ROWS[c], {k}, 3]' for k in range(3)])
        for k in range(3):
            w.set(f'pc{k}', pp[k])
        for k in range(6):
            w.set(f'VV{k}', '0.0')
            w.set(f'AA{k}', '0.0')

    VV = (['VV0', 'VV1', 'VV2'], ['VV3', 'VV4', 'VV5'])
    Sj = (_v3('S', '6 * j'), _v3('S', '6 * j + 3'))

    def base_sum(w, V):
        for k in range(6):
            w.set(f'VV{k}', f'VV{k} + S[6 * j + {k}] * vf[idx]')
            w.set(f'AA{k}', f'AA{k} + S[6 * j + {k}] * af[idx]')

    def along(w, V):
        for k in range(6):
            w.set(f'PAR[18 * j + {k}]', f'VV{k}')
            w.set(f'PAR[18 * j + {6 + k}]', f'AA{k}')
        sd = _mcross(V, VV, Sj)
        flat = sd[0] + sd[1]
        for k in range(6):
            w.set(f'AA{k}', f'AA{k} + S[6 * j + {k}] * af[idx] + {flat[k]} * vf[idx]')
            w.set(f'VV{k}', f'VV{k} + S[6 * j + {k}] * vf[idx]')
            w.set(f'PAR[18 * j + {12 + k}]', flat[k])
            w.set(f'OWN[6 * j + {k}]', f'VV{k}')

    def local_velocity(w, V):
        wl, ul = _in_frame(V, R, p, VV)
        for k in range(3):
            w.set(f'wl{k}', wl[k])
            w.set(f'ul{k}', ul[k])

    def terms(w, V):
        Vp = (_v3('PAR', '18 * j'), _v3('PAR', '18 * j + 3'))
        Ap = (_v3('PAR', '18 * j + 6'), _v3('PAR', '18 * j + 9'))
        Sd = (_v3('PAR', '18 * j + 12'), _v3('PAR', '18 * j + 15'))
        own = (_v3('OWN', '6 * j'), _v3('OWN', '6 * j + 3'))
        wl, ul = ['wl0', 'wl1', 'wl2'], ['ul0', 'ul1', 'ul2']
        x = _mcross(V, Sj, Vp)
        Vq = _in_frame(V, R, p, (_neg3(V, x[0]), _neg3(V, x[1])))
        y = _mcross(V, Sj, Ap)
        z = _mcross(V, x, (V.add(VV[0], _neg3(V, Vp[0])), V.add(VV[1], _neg3(V, Vp[1]))))
        Aq = _in_frame(V, R, p, (_neg3(V, V.add(y[0], z[0])), _neg3(V, V.add(y[1], z[1]))))
        Vd = _in_frame(V, R, p, Sj)
        o = _mcross(V, Sj, (V.add(VV[0], _neg3(V, own[0])), V.add(VV[1], _neg3(V, own[1]))))
        Ad = _in_frame(V, R, p, (V.add(Sd[0], o[0]), V.add(Sd[1], o[1])))
        classical_q = V.add(Aq[1], V.cross(Vq[0], ul), V.cross(wl, Vq[1]))
        classical_v = V.add(Ad[1], V.cross(Vd[0], ul), V.cross(wl, Vd[1]))
        names = {'lq': (Aq[1], classical_q), 'lv': (Ad[1], classical_v)}
        for key, (six, three) in names.items():
            for k in range(3):
                w.set(f'{key}{k}', f'{six[k]} if dim == 6 else {three[k]}')
        for key, value in (('aq', Aq[0]), ('av', Ad[0]), ('lj', Vd[1]), ('aj', Vd[0])):
            for k in range(3):
                w.set(f'{key}{k}', value[k])

    def world(w, V):            # not local: the rows turned by R
        for key in ('lq', 'lv', 'aq', 'av', 'lj', 'aj'):
            turned = V.mv(R, [f'{key}{k}' for k in range(3)])
            for k in range(3):
                w.set(f'{key}{k}', turned[k])

    def force(w, V):
        f = V.bind([f'LAM[t, r0 + {k}]' for k in range(3)])
        m = V.bind([f'LAM[t, r0 + {3 + k}] if dim == 6 else 0.0' for k in range(3)])
        fr, mr = V.mv(R, f), V.mv(R, m)
        for k in range(3):
            w.set(f'f{k}', f'{fr[k]} if loc else {f[k]}')
            w.set(f'm{k}', f'{mr[k]} if loc else {m[k]}')
        fm = V.add(['m0', 'm1', 'm2'], V.cross(p, ['f0', 'f1', 'f2']))
        for k in range(3):
            w.set(f'F{k}', fm[k])

    def force_column(w, V):
        F, f = ['F0', 'F1', 'F2'], ['f0', 'f1', 'f2']
        tm = V.add(V.cross(Sj[0], F), V.cross(Sj[1], f))
        tf = V.cross(Sj[0], f)
        moved = V.cross(V.add(V.cross(Sj[0], p), Sj[1]), f)
        for k, x in enumerate(tm + tf + moved):
            w.set(f'G{k}', x)

    def force_entry(w, V):
        Si = (_v3('S', '6 * i'), _v3('S', '6 * i + 3'))
        turned = _add_dots(V, Si, (['G0', 'G1', 'G2'], ['G3', 'G4', 'G5']))
        w.set('turnd', turned)
        w.set('movedi', V.dot(Si[0], ['G6', 'G7', 'G8']))

    return ['    r0 = 0',
            '    for c in range(PATHS.shape[0]):',
            '        k = LENGTHS[c]',
            '        dim = DIMS[c]',
            '        loc = LOCAL[c] != 0',
            '        for j in range(k):',
            '            cj = PATHS[c, j]',
            '            li = ROWS_OF[cj]',
            '            turns = AXES[cj, 1] != 0.0',
            *_block(3, column),
            *_block(2, frame),
            f'        for j in range({nb}):',
            '            idx = PATHS[c, j]',
            *_block(3, base_sum),
            '        for j in range(k):',
            '            for e in range(18):',
            '                PAR[18 * j + e] = 0.0',
            f'            if j < {nb}:',
            *_own_base_lines(),
            '                continue',
            '            idx = PATHS[c, j]',
            *_block(3, along),
            *_block(2, local_velocity),
            '        for j in range(k):',
            '            cj = PATHS[c, j]',
            *_block(3, terms),
            '            if not loc:',
            *_block(4, world),
            *[f'            {a}[(r0 + {e}) * {nf} + cj] = {x}{e}'
              for a, x in (('JF', 'lj'), ('AQF', 'lq'), ('AVF', 'lv')) for e in range(3)],
            '            if dim == 6:',
            *[f'                {a}[(r0 + {3 + e}) * {nf} + cj] = {x}{e}'
              for a, x in (('JF', 'aj'), ('AQF', 'aq'), ('AVF', 'av')) for e in range(3)],
            *_block(2, force),
            '        for j in range(k):',
            *_block(3, force_column),
            '            for i in range(k):',
            *_block(4, force_entry),
            f'                below = i > j or (i < {nb} and j < {nb})',
            f'                at = PATHS[c, i] * {nf} + PATHS[c, j]',
            '                if loc:',
            '                    DQF[at] += 0.0 if below else turnd',
            '                else:',
            '                    DQF[at] += movedi - (turnd if below else 0.0)',
            '        r0 += dim']


def _own_base_lines() -> list:
    """Return the lines storing the base block's body velocity (the whole base's) in OWN."""
    return [f'                OWN[6 * j + {k}] = VV{k}' for k in range(6)]


def _add_dots(V, a: tuple, b: tuple) -> str:
    """Return a[0] . b[0] + a[1] . b[1] (two 3-vectors each), bound."""
    return V.w.let(f'{V.dot(a[0], b[0])} + {V.dot(a[1], b[1])}')


def _dense_halves(nv: int, width: int, fill: list) -> tuple:
    """
    Return M = L L^T's lines: (factor, (Z | W) = L^-1 (R1 | J^T), X = L^-T (Z - W Y)).

    ``ZW``'s rows in the model's order; the last step on its first 3 nv columns.
    """
    c = 3 * nv
    forward = [f'    for i in range({nv}):',
               '        for k2 in range(i):',
               f'            f = chol[{_packed("i", "k2")}]',
               f'            for e in range({width}):',
               f'                ZW[i * {width} + e] -= f * ZW[k2 * {width} + e]',
               f'        d = 1.0 / chol[{_packed("i", "i")}]',
               f'        for e in range({width}):',
               f'            ZW[i * {width} + e] *= d']
    backward = [f'    for i in range({nv - 1}, -1, -1):',
                f'        for k2 in range(i + 1, {nv}):',
                f'            f = chol[{_packed("k2", "i")}]',
                f'            for j in range({c}):',
                f'                ZW[i * {width} + j] -= f * ZW[k2 * {width} + j]',
                f'        d = 1.0 / chol[{_packed("i", "i")}]',
                f'        for j in range({c}):',
                f'            ZW[i * {width} + j] *= d']
    return factored_mass_matrix(nv, fill), forward, backward


def _tree_halves(nv: int, width: int, fill: list) -> tuple:
    """
    Return M = L^T L's lines along the tree: (factor, L^-T (R1 | J^T), L^-1 (Z - W Y)).

    ``ZW``'s row i is the model's row perm[i] (:class:`~.codegen.TreeLayout`'s tables bound
    before); the first substitution descendants first, the second ancestors first (each row
    k against its chain: L[k, j] at chol[beg[k] + depth of j]), on the first 3 nv columns.
    """
    c = 3 * nv
    descent = [f'    for ck in range({nv - 1}, -1, -1):',
               '        sk = beg[ck]',
               '        dk = dep[ck]',
               '        d = 1.0 / chol[sk + dk]',
               f'        for e in range({width}):',
               f'            ZW[ck * {width} + e] *= d',
               '        ci = ck',
               '        for ce in range(dk - 1, -1, -1):',
               '            ci = lam[ci]',
               '            f = chol[sk + ce]',
               f'            for e in range({width}):',
               f'                ZW[ci * {width} + e] -= f * ZW[ck * {width} + e]']
    ascent = [f'    for ck in range({nv}):',
              '        sk = beg[ck]',
              '        dk = dep[ck]',
              '        ci = ck',
              '        for ce in range(dk - 1, -1, -1):',
              '            ci = lam[ci]',
              '            f = chol[sk + ce]',
              f'            for j in range({c}):',
              f'                ZW[ck * {width} + j] -= f * ZW[ci * {width} + j]',
              '        d = 1.0 / chol[sk + dk]',
              f'        for j in range({c}):',
              f'            ZW[ck * {width} + j] *= d']
    return tree_factored_mass_matrix(nv, fill), descent, ascent


def _kkt_lines(nv: int, m: int, tree) -> list:
    """
    Return the KKT solve (the CPU's ``_kkt``) into the six outputs; BAD 2 or 8 refusals.

    ``tree``: None for M = L L^T, else the robot's :class:`~.codegen.TreeLayout` for M = L^T
    L along the tree (then Z = L^-T R1, W = L^-T J^T, X = L^-1 (Z - W Y): the same D = W^T W
    and W^T Z), ZW's rows in its order.
    """
    c, width = 3 * nv, 3 * nv + m
    row, inverse, other = ('i', 'L^-1', 'L^-T') if tree is None else ('ri', 'L^-T', 'L^-1')
    outputs = ('DVDQ', 'DVDV', 'DVDT', 'DLDQ', 'DLDV', 'DLDT')
    fill = []
    for o in outputs[:3]:
        fill += [f'        for ci in range({nv}):', f'            for cj in range({nv}):',
                 f'                {o}[t, ci, cj] = nan']
    for o in outputs[3:]:
        fill += [f'        for ci in range({m}):', f'            for cj in range({nv}):',
                 f'                {o}[t, ci, cj] = nan']
    factor, first, second = (_dense_halves if tree is None else _tree_halves)(nv, width, fill)
    return [*factor,
            f'    for i in range({nv}):                  # (Z | W) = {inverse} (R1 | J^T)',
            *([] if tree is None else ['        ri = perm[i]']),
            f'        for j in range({nv}):',
            f'            ZW[i * {width} + j] = DQ[{row} * {nv} + j] - DTQ[t, {row}, j]',
            f'            ZW[i * {width} + {nv} + j] = -DTV[t, {row}, j]',
            f'            ZW[i * {width} + {2 * nv} + j] = 1.0 if {row} == j else 0.0',
            f'        for r in range({m}):',
            f'            ZW[i * {width} + {c} + r] = J[r * {nv} + {row}]',
            *first,
            f'    for r in range({m}):                   # D = W^T W, and a copy B',
            f'        for s in range({m}):',
            '            cs = 0.0',
            f'            for i in range({nv}):',
            f'                cs += ZW[i * {width} + {c} + r] * ZW[i * {width} + {c} + s]',
            f'            D[r * {max(m, 1)} + s] = cs',
            f'            B[r * {max(m, 1)} + s] = cs',
            '        bv[r] = 0.0',
            *_min_norm(m, m),
            '    low = 0.0',
            '    for k2 in range(%d):' % m,
            '        low = sv[k2] if k2 == 0 or sv[k2] < low else low',
            f'    if {m} > 0 and not low > rcond * rcond * top:',
            *fill,
            '        BAD[t] = 8',
            '        return',
            f'    for cj in range({m}):',
            f'        for ci in range(cj, {m}):',
            f'            chd[{_packed("ci", "cj")}] = D[ci * {max(m, 1)} + cj]',
            *[line.replace('chol', 'chd') for line in _looped_factor(m)],
            '    if notpd > 0:',
            *fill,
            '        BAD[t] = 8',
            '        return',
            f'    for r in range({m}):                   # Y = D^-1 (W^T Z - R2)',
            f'        for j in range({nv}):',
            f'            YL[r * {c} + j] = AQ[r * {nv} + j]',
            f'            YL[r * {c} + {nv} + j] = AV[r * {nv} + j]',
            f'            YL[r * {c} + {2 * nv} + j] = 0.0',
            f'    for i in range({nv}):',
            f'        for r in range({m}):',
            f'            f = ZW[i * {width} + {c} + r]',
            f'            for j in range({c}):',
            f'                YL[r * {c} + j] += f * ZW[i * {width} + j]',
            f'    for r in range({m}):',
            '        for k2 in range(r):',
            f'            f = chd[{_packed("r", "k2")}]',
            f'            for j in range({c}):',
            f'                YL[r * {c} + j] -= f * YL[k2 * {c} + j]',
            f'        d = 1.0 / chd[{_packed("r", "r")}]',
            f'        for j in range({c}):',
            f'            YL[r * {c} + j] *= d',
            f'    for r in range({m - 1}, -1, -1):',
            f'        for k2 in range(r + 1, {m}):',
            f'            f = chd[{_packed("k2", "r")}]',
            f'            for j in range({c}):',
            f'                YL[r * {c} + j] -= f * YL[k2 * {c} + j]',
            f'        d = 1.0 / chd[{_packed("r", "r")}]',
            f'        for j in range({c}):',
            f'            YL[r * {c} + j] *= d',
            f'    for i in range({nv}):                  # X = {other} (Z - W Y), in Z',
            f'        for r in range({m}):',
            f'            f = ZW[i * {width} + {c} + r]',
            f'            for j in range({c}):',
            f'                ZW[i * {width} + j] -= f * YL[r * {c} + j]',
            *second,
            f'    for i in range({nv}):',
            *([] if tree is None else ['        ri = perm[i]']),
            f'        for j in range({nv}):',
            f'            DVDQ[t, {row}, j] = ZW[i * {width} + j]',
            f'            DVDV[t, {row}, j] = ZW[i * {width} + {nv} + j]',
            f'            DVDT[t, {row}, j] = ZW[i * {width} + {2 * nv} + j]',
            f'    for r in range({m}):',
            f'        for j in range({nv}):',
            f'            DLDQ[t, r, j] = -YL[r * {c} + j]',
            f'            DLDV[t, r, j] = -YL[r * {c} + {nv} + j]',
            f'            DLDT[t, r, j] = -YL[r * {c} + {2 * nv} + j]',
            '    BAD[t] = 0']


def constrained_derivatives_source(nv: int, nb: int, nf: int, m: int, tree=None) -> str:
    """
    Return the source of ``contact_derivatives`` (signature: ``gpu.CONSTRAINED_SIGNATURE``).

    For nv coordinates (nb of them a moving base's), nf of the tree without mimic
    constraints and m contact rows; ``tree``: the robot's :class:`~.codegen.TreeLayout`
    (``codegen._Robot(model).layout()``: above ``codegen.UNROLLED_SOLVE`` coordinates, M =
    L^T L solved along the tree), or None (M = L L^T).
    """
    wide, c = max(m, 1), 3 * nv
    size = nv * (nv + 1) // 2 if tree is None else tree.size
    kernel = [
        'def contact_derivatives(AXES, ROWS_OF, PATHS, LENGTHS, ROWS, POINTS, DIMS, LOCAL, PCOL,',
        '                        PVAL, rcond, V, DV, POSES, LAM, DTQ, DTV, M, DVDQ, DVDV, DVDT,',
        '                        DLDQ, DLDV, DLDT, BAD):',
        '    t = cuda.grid(1)',
        '    if t >= V.shape[0]:',
        '        return',
        f'    vf = cuda.local.array({nf}, real)',
        f'    af = cuda.local.array({nf}, real)',
        f'    S = cuda.local.array({6 * nf}, real)',
        f'    PAR = cuda.local.array({18 * nf}, real)',
        f'    OWN = cuda.local.array({6 * nf}, real)',
        f'    JF = cuda.local.array({wide * nf}, real)',
        f'    AQF = cuda.local.array({wide * nf}, real)',
        f'    AVF = cuda.local.array({wide * nf}, real)',
        f'    DQF = cuda.local.array({nf * nf}, real)',
        f'    J = cuda.local.array({wide * nv}, real)',
        f'    AQ = cuda.local.array({wide * nv}, real)',
        f'    AV = cuda.local.array({wide * nv}, real)',
        f'    DQ = cuda.local.array({nv * nv}, real)',
        f'    chol = cuda.local.array({size}, real)',
        f'    chd = cuda.local.array({wide * (wide + 1) // 2}, real)',
        f'    ZW = cuda.local.array({nv * (c + m)}, real)',
        f'    D = cuda.local.array({wide * wide}, real)',
        f'    B = cuda.local.array({wide * wide}, real)',
        f'    W = cuda.local.array({wide * wide}, real)',
        f'    bv = cuda.local.array({wide}, real)',
        f'    x = cuda.local.array({wide}, real)',
        f'    sv = cuda.local.array({wide}, real)',
        f'    YL = cuda.local.array({wide * c}, real)',
        *(tree.arrays if tree is not None else []),
        f'    for i in range({nf}):                  # the unconstrained tree: P v, P v\'',
        '        col = PCOL[i]',
        '        vf[i] = PVAL[i] * V[t, col] if col >= 0 else 0.0',
        '        af[i] = PVAL[i] * DV[t, col] if col >= 0 else 0.0',
        f'        for e in range({nf}):',
        f'            DQF[i * {nf} + e] = 0.0',
        f'    for e in range({wide * nf}):',
        '        JF[e] = 0.0',
        '        AQF[e] = 0.0',
        '        AVF[e] = 0.0',
        *_terms_lines(nb, nf),
        f'    for e in range({wide * nv}):               # J = Jf P, ..., DQ = P^T DQF P',
        '        J[e] = 0.0',
        '        AQ[e] = 0.0',
        '        AV[e] = 0.0',
        f'    for e in range({nv * nv}):',
        '        DQ[e] = 0.0',
        f'    for i in range({nf}):',
        '        col = PCOL[i]',
        '        if col < 0:',
        '            continue',
        '        scl = PVAL[i]',
        f'        for r in range({m}):',
        f'            J[r * {nv} + col] += JF[r * {nf} + i] * scl',
        f'            AQ[r * {nv} + col] += AQF[r * {nf} + i] * scl',
        f'            AV[r * {nv} + col] += AVF[r * {nf} + i] * scl',
        f'        for j in range({nf}):',
        '            col2 = PCOL[j]',
        '            if col2 >= 0:',
        f'                DQ[col * {nv} + col2] += scl * DQF[i * {nf} + j] * PVAL[j]',
        *_kkt_lines(nv, m, tree)]
    lines = ['# Generated by kron_dynamics.gpu.constrained_derivatives: do not edit.',
             f'# nv = {nv}, nb = {nb}, nf = {nf}, m = {m}',
             'from math import nan, sqrt',
             '',
             'from numba import cuda',
             'from numba import float64 as real',
             *tree_tables(tree),
             '', '']
    return '\n'.join(lines + kernel) + '\n'


def contact_derivatives_source(model, contacts) -> str:
    """
    Return ``contact_derivatives``' source for a RobotModel's contacts (what GpuModel compiles).

    :func:`constrained_derivatives_source` for the model's nv and base, the nf coordinates of
    its tree without mimic constraints, the contacts' m rows and the robot's tree layout.
    """
    packed = model._contact_paths(contacts)[2]
    return constrained_derivatives_source(model.nv, model.nv - model.n, packed[0].shape[0],
                                          int(packed[5].sum()), _Robot(model).layout())
