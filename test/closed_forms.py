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
The papers' printed closed forms, typed once (typos of the print corrected, noted inline).

Stacker of 000 (eqs. 102-107, G), in DH frame 0 and in the symbols of 000 Tables 1-2; the
rover arm's element M[2][1] of 003 (1-based). ``test_symbolic.py`` compares them with the
symbolic derivation, ``test_closed_forms.py`` evaluates them with the papers' numbers and
compares them with the numeric model.
"""

import sympy as sp

from kron_dynamics.model.machines import STACKER

q1, q2, q3 = sp.symbols('q1 q2 q3')
a3, l3, m1, m2, m3, g = sp.symbols('a3 l3 m1 m2 m3 g')
I2x, I2y, I2z, I3x, I3y, I3z = sp.symbols('I2x I2y I2z I3x I3y I3z')
STACKER_SYMBOLS = (a3, l3, m1, m2, m3, g, I2x, I2y, I2z, I3x, I3y, I3z)


def stacker() -> dict:
    """Return the stacker's eqs. (102)-(107) and G as sympy matrices of q2, q3 and Tables 1-2."""
    s2, c2, s3, c3 = sp.sin(q2), sp.cos(q2), sp.sin(q3), sp.cos(q3)
    HR_105 = sp.zeros(3, 9)
    HR_105[0, 7], HR_105[2, 7] = c2, s2                     # printed '-sin q2'
    M12, M13 = m3 * l3 * c2 * c3, -m3 * l3 * s2 * s3
    k = m3 * l3
    e = (m3 * l3 ** 2 + I3y - I3x) * s3 * c3
    return {
        'JT_102': sp.Matrix([[0, -a3 * s2 * c3, -a3 * c2 * s3], [0, 0, -a3 * c3],
                             [1, a3 * c2 * c3, -a3 * s2 * s3]]),
        'HT_103': sp.Matrix([
            [0, 0, 0, 0, -a3 * c2 * c3, a3 * s2 * s3, 0, a3 * s2 * s3, -a3 * c2 * c3],
            [0, 0, 0, 0, 0, 0, 0, 0, a3 * s3],              # printed 'a3 sin q'
            [0, 0, 0, 0, -a3 * s2 * c3, -a3 * c2 * s3, 0, -a3 * c2 * s3, -a3 * s2 * c3]]),
        'JR_104': sp.Matrix([[0, 0, s2], [0, -1, 0], [0, 0, -c2]]),
        'HR_105': HR_105,
        'M_106': sp.Matrix([[m1 + m2 + m3, M12, M13],
                            [M12, I2y + (m3 * l3 ** 2 + I3y) * c3 ** 2 + I3x * s3 ** 2, 0],
                            [M13, 0, m3 * l3 ** 2 + I3z]]),  # printed 'm3 l3^2 I3z'
        'Cstar_107': sp.Matrix([
            [0, 0, 0, 0, -k * s2 * c3, -k * c2 * s3, 0, -k * c2 * s3, -k * s2 * c3],
            [0, -k * s2 * c3 / 2, -k * c2 * s3 / 2, k * s2 * c3 / 2, 0, -2 * e,
             k * c2 * s3 / 2, 0, 0],
            [0, -k * c2 * s3 / 2, -k * s2 * c3 / 2, k * c2 * s3 / 2, e, 0, k * s2 * c3 / 2,
             0, 0]]),
        'G': sp.Matrix([0, 0, m3 * g * l3 * c3]),
    }


def stacker_values(g_value: float = 9.81) -> dict:
    """Return the papers' numbers of the stacker (000 Tables 1-2) as exact sympy numbers."""
    p = STACKER
    (i2x, i2y, i2z), (i3x, i3y, i3z) = p['I2'], p['I3']
    numbers = dict(a3=p['a3'], l3=p['l3'], m1=p['m1'], m2=p['m2'], m3=p['m3'], g=g_value,
                   I2x=i2x, I2y=i2y, I2z=i2z, I3x=i3x, I3y=i3y, I3z=i3z)
    return {s: sp.nsimplify(numbers[s.name]) for s in STACKER_SYMBOLS}


def in_symbols(expr, q, parameter=None):
    """
    Rename a closed form into another model's symbols.

    ``q`` are the model's three joint symbols; ``parameter(name)`` returns what replaces
    the parameter of that name (a symbol or a number; None: keep the parameters).
    """
    mapping = dict(zip((q1, q2, q3), q))
    if parameter is not None:
        mapping.update({s: parameter(s.name) for s in STACKER_SYMBOLS})
    return expr.xreplace(mapping)


# 003, section 7.2: the rover arm's M[2][1] (1-based) = 0.00192 cos q2
ROVER_ARM_M21 = sp.Rational('0.00192') * sp.cos(q2)
